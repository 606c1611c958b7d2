// What a node reports: counter deltas and session events out of its journal
// (<data-dir>/node-journal.log, cluster/journal.ts), at least every REPORT_MS, each report with
// its seq and kept in the journal until the control plane acknowledges it (resent after a
// reconnection, the control plane ignores a seq it already applied). Every channel begins with
// a hello naming this process (boot id) and the last seq issued before it could carry anything
// (boot seq): another id tells the control plane the node restarted (cluster/crash-repair.ts).
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DataPlane } from '../dataplane/api.ts';
import type { Logger } from '../domain.ts';
import { CounterJournal, type Report } from '../cluster/journal.ts';
import type { Carried } from './relay-server.ts';
import type { ChannelLink } from './channel-client.ts';
import type { NodePorts } from './listeners.ts';

/** How often a report (deltas, events, contact) is sent. */
const REPORT_MS = 500;
/** Reports sealed in one tick at most (each within the channel's frame bound, cluster/node-guard.ts). */
const MAX_REPORTS_PER_TICK = 4;
/**
 * Reports sent and not yet acknowledged on a channel at most: a backlog (resent after a
 * reconnection) goes out as acknowledgements come, within the channel's per-node rates.
 */
const SEND_WINDOW = 8;

/**
 * The node's journal: unacknowledged reports and what was counted but not reported, as left by
 * a previous run. What the previous process counted goes into reports now, before this process
 * carries anything: their seqs are at most the boot seq the control plane's crash repair waits for.
 */
export function openNodeJournal(dataDir: string, log: Logger): CounterJournal {
  const journal = CounterJournal.open(join(dataDir, 'node-journal.log'), log);
  importLegacyReports(join(dataDir, 'node-reports.json'), journal, log);
  while (journal.seal());
  // The control plane repairs what the previous process carried (it sees a new boot id).
  journal.forgetCarried(journal.carriedBefore);
  return journal;
}

/** Reports an older node kept in node-reports.json (before the journal): taken over once, then the file goes. */
function importLegacyReports(file: string, journal: CounterJournal, log: Logger): void {
  let saved: { reports?: Report[] };
  try {
    saved = JSON.parse(readFileSync(file, 'utf8')) as { reports?: Report[] };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err: String(err) }, 'the saved node reports could not be read; starting without them');
    return;
  }
  journal.adopt(saved.reports ?? []);
  rmSync(file, { force: true });
}

export interface ReporterDeps {
  journal: CounterJournal;
  channel: ChannelLink & { greet(): void; clockSkew(): number | null };
  /** The node's ports and TLS facts, sent with every report (kept current by the listeners), with its clock's skew. */
  ports: NodePorts;
  dataPlane: Pick<DataPlane, 'openByZone'>;
  relay: { takeCarried(): Carried } | null;
  /** Where acknowledged reports go (a grant may have been measured before them). */
  acks: { acked(reports: Report[], at: number): void; forgetAcked(): void };
}

export class NodeReporter {
  private readonly deps: ReporterDeps;
  /**
   * This process's random id, sent on every channel's first report: another id tells the control
   * plane the node restarted, so the sessions the previous process carried are repaired
   * (server/cluster/crash-repair.ts) once the reports up to `bootSeq` (the last seq issued before
   * this process could carry anything: before its first state) are applied.
   */
  private readonly bootId = randomUUID();
  private bootSeq: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** The highest seq sent on this channel (reports above it are sent next, in order). */
  private sentUpTo = 0;

  constructor(deps: ReporterDeps) {
    this.deps = deps;
  }

  /** The first message of every channel. */
  hello(): object {
    return { type: 'report', seq: 0, ports: this.facts(), boot: this.bootId, boot_seq: this.bootSeq ?? this.deps.journal.lastSeq };
  }

  /** A state came: from now on this process may carry sessions. */
  stateArrived(): void {
    this.bootSeq ??= this.deps.journal.lastSeq;
  }

  /** The control plane applied every report up to `seq`; `hello`: its answer to the channel's hello. */
  ack(seq: number, hello: boolean | undefined): void {
    const { journal, acks, channel } = this.deps;
    if (seq > journal.lastSeq) {
      // The control plane applied seqs this node never issued (its data folder was lost):
      // what it holds was not applied; renumber it after the control plane's last.
      journal.renumberAfter(seq);
      acks.forgetAcked();
    }
    const at = Date.now();
    acks.acked(journal.ack(seq), at);
    if (hello) {
      channel.greet();
      this.sentUpTo = seq;
    }
    this.pump();
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), REPORT_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Reports are sealed only while they can be sent (connected, greeted: the seq numbering is
   * settled) and while few wait for an acknowledgement; otherwise what is counted stays pending
   * in the journal, merged per session.
   */
  tick(): void {
    const { channel, journal } = this.deps;
    if (!channel.open) return;
    for (let i = 0; channel.ready && i < MAX_REPORTS_PER_TICK && journal.reports.length < SEND_WINDOW; i++) if (!journal.seal()) break;
    if (!this.pump()) channel.send({ type: 'report', seq: 0, ports: this.facts(), open: this.openZones(), ...this.relayed() });
  }

  /** Sends the unacknowledged reports not yet sent on this channel, at most SEND_WINDOW outstanding; whether it sent any. */
  private pump(): boolean {
    const { channel, journal } = this.deps;
    if (!channel.ready) return false;
    let outstanding = 0;
    let sent = false;
    for (const r of journal.reports) {
      if (r.seq <= this.sentUpTo) {
        outstanding++;
        continue;
      }
      if (outstanding >= SEND_WINDOW) break;
      channel.send({ type: 'report', seq: r.seq, ports: this.facts(), open: this.openZones(), counters: r.counters, events: r.events.map(({ at: _at, ...e }) => e), ...this.relayed() });
      this.sentUpTo = r.seq;
      outstanding++;
      sent = true;
    }
    return sent;
  }

  /** The ports and TLS facts, and this node's clock less the control plane's (null until known). */
  private facts(): NodePorts & { clock_skew_ms: number | null } {
    return { ...this.deps.ports, clock_skew_ms: this.deps.channel.clockSkew() };
  }

  private openZones(): Array<{ zone: string; count: number }> {
    return this.deps.dataPlane.openByZone?.() ?? [];
  }

  /** What this node's relay carried for other entries since the last report (not resent if lost). */
  private relayed(): { relayed?: Carried } {
    const carried = this.deps.relay?.takeCarried() ?? {};
    return Object.keys(carried).length ? { relayed: carried } : {};
  }
}
