// Crash repair: the sessions a data-plane node (`node run`) no longer carries do not stay active.
//
//  - A node that restarted: each `node run` process has a random boot id, sent on its channel's
//    first report with `boot_seq`, the last report seq issued before it could carry anything.
//    Another id than the one stored for the node (nodes.boot_id) means the sessions the previous
//    process carried are gone with it. Its reports up to boot_seq (journalled by the previous
//    process) are applied first, then the sessions still `active` on the node go `idle`
//    (reusable) or `ended` (one-shot) with session_stats and session_end, and claims made before
//    this hello are released (store.repairRestartedNode). The same id again (a reconnection)
//    repairs nothing.
//  - A node silent for NODE_SILENT_SECONDS (no report reached any instance: nodes.last_contact):
//    the sweep, on every instance every SWEEP_MS, repairs its active sessions likewise and moves
//    its sessions that did not end to the least-loaded up node of the zone when there is one
//    (store.repairSilentNodes): their links and subscriptions then name that node. When that
//    node's process comes back after all, with a new boot id, the lifecycle its previous process
//    journalled (statuses, session_start / heartbeat / end) is dropped from its late reports,
//    whose bytes still count: the repair already closed those sessions. With the same boot id
//    (it was only cut off), its later reports set the status of what it still carries.
//
// Each repair is one transaction whose UPDATE is conditional (`status = 'active'`), so of
// instances racing (two control planes on PostgreSQL), one repairs a session and stores its
// events: every event stream carries them once.
import type { Logger } from '../domain.ts';
import type { ChangeFeed } from '../events/changes.ts';
import type { ControlStore } from '../store/control.ts';
import type { NodeInfo } from '../store/store.ts';
import type { RepairedEvent } from '../store/repos/repair.ts';

/** What the repairs use of the server's services. */
export interface RepairDeps {
  data: ControlStore;
  log: Logger;
  /** Wakes the readers of events already stored. */
  announce(stored: RepairedEvent[]): void;
  /** Wakes the node channels (they re-send their state). */
  changes: ChangeFeed;
}

/** How often every instance looks for silent nodes. */
export const SWEEP_MS = 2000;

function announced(services: RepairDeps, events: RepairedEvent[], what: string, node?: string): void {
  if (events.length === 0) return;
  services.announce(events);
  services.changes.emit();
  services.log.info({ ...(node ? { node } : {}), sessions: events.length / 2 }, what);
}

/** The sweep of silent nodes; stop() ends it. */
export function startRepairSweep(services: RepairDeps): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    services.data
      .repairSilentNodes()
      .then((events) => announced(services, events, 'sessions of a silent node repaired'))
      .catch((err: unknown) => services.log.warn({ err: String(err) }, 'the silent-node repair failed; tried again'))
      .finally(() => (running = false));
  }, SWEEP_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** One channel's view of its node's process: what its hello said, and the repair it still owes. */
export class NodeBoot {
  private pending: { boot: string; bootSeq: number; stale: boolean; claimsBefore: number } | null = null;
  private readonly services: RepairDeps;
  private readonly node: NodeInfo;

  constructor(services: RepairDeps, node: NodeInfo) {
    this.services = services;
    this.node = node;
  }

  /** The channel's first report named the process (in the node's report chain, before its reports). */
  async hello(boot: unknown, bootSeq: unknown): Promise<void> {
    if (typeof boot !== 'string' || boot.length === 0 || boot.length > 64) return;
    const seq = typeof bootSeq === 'number' && Number.isSafeInteger(bootSeq) && bootSeq >= 0 ? bootSeq : 0;
    const said = await this.services.data.nodeHello(this.node.id, boot);
    if (said === 'same') return;
    this.pending = { boot, bootSeq: seq, stale: said === 'new_after_repair', claimsBefore: Date.now() };
    await this.applied((await this.services.data.nodeReportSeq(this.node.id)) ?? 0);
  }

  /** Whether report `seq` is the previous process's, after its sessions were repaired: its lifecycle is dropped. */
  stale(seq: number): boolean {
    return !!this.pending?.stale && seq <= this.pending.bootSeq;
  }

  /** Reports up to `seq` are applied: once they reach boot_seq, the previous process's sessions are repaired. */
  async applied(seq: number): Promise<void> {
    const p = this.pending;
    if (!p || seq < p.bootSeq) return;
    const events = await this.services.data.repairRestartedNode(this.node.id, p.boot, p.claimsBefore);
    this.pending = null;
    if (events) announced(this.services, events, 'sessions of a restarted node repaired', this.node.name);
  }
}
