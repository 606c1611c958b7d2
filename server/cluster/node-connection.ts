// One connected node's channel (node-channel.ts): its state sent whenever it changed, its
// reports applied in order and acknowledged, its grant releases and its session claims answered.
import type { WebSocket } from 'ws';
import type { NodeInfo } from '../store/store.ts';
import { NODE_UP_SECONDS } from '../store/repos/nodes.ts';
import { GrantPace } from './shares.ts';
import { mergeClientLimits } from '../contract/client-limits.ts';
import { NodeBoot } from './crash-repair.ts';
import type { ChannelGuard } from './node-guard.ts';
import type { RelayAudit } from './relay-audit.ts';
import { buildState, limitsOf, type NodeChannelDeps } from './node-state.ts';
import { applyReport, nodeFacts, openCount, portsOf, type NodeMessage } from './node-report.ts';
import { ChannelSilence, CHANNEL_SILENT_MS, type ReadCounter } from './channel-silence.ts';

/** How often the state sent to a node is rebuilt and compared with the last one sent. */
const STATE_MS = 250;
/** A ping this often: the node hears this instance while its pings wait behind a large report on a slow uplink; it carries this instance's clock. */
const PING_EVERY = 4;
/**
 * A channel that ends without the node's stop: the node is down once this many seconds pass
 * without its contact on any instance (a crash, `kill -9`), not NODE_UP_SECONDS after its last
 * one. A node that reconnects within it (its first report is contact) is not marked.
 */
export const NODE_LOST_SECONDS = 2;

/** What every node's connection shares with the channel. */
export interface ChannelShared {
  services: NodeChannelDeps;
  /** Reports are applied one at a time per node (a resend must see the seq of the one before). */
  chains: Map<string, Promise<void>>;
  /** Each connected node's open connections per zone, from its last report (metrics). */
  openOf: Map<string, { zone: string; node: string; count: number }>;
  /** What exits carried for each entry against what the entry counted (relay-audit.ts). */
  audit: RelayAudit;
  /** Lost channels waiting NODE_LOST_SECONDS (cleared when the channel closes). */
  lost: Set<NodeJS.Timeout>;
  /** This instance is closing its channels: their nodes are not lost, they reconnect elsewhere. */
  closing: boolean;
}

type Claim = { id?: unknown; session?: unknown; active?: unknown };

export class NodeConnection {
  private readonly shared: ChannelShared;
  private readonly ws: WebSocket;
  private readonly node: NodeInfo;
  private readonly guard: ChannelGuard;
  private readonly pace = new GrantPace();
  private readonly boot: NodeBoot;
  private lastSent = '';
  private factsSeen = '';
  private closed = false;
  private helloSeen = false;
  /** The node said it is stopping (once a connection: what it changes is the node's own row). */
  private stoppingSaid = false;
  private building = false;
  /** A change came while a state was being built (it may have read before the change): build again after it. */
  private changedWhileBuilding = false;

  constructor(shared: ChannelShared, ws: WebSocket, node: NodeInfo, guard: ChannelGuard) {
    this.shared = shared;
    this.ws = ws;
    this.node = node;
    this.guard = guard;
    this.boot = new NodeBoot(shared.services, node);
  }

  /** `socket`: the connection under the WebSocket (what it reads is the node's life). */
  start(socket: ReadCounter): void {
    const { services } = this.shared;
    const { log, data } = services;
    const { node, ws } = this;
    const short = node.id.slice(0, 8);
    log.info({ node: node.name, id: short }, 'node connected');
    // The last report applied for this node, as an acknowledgement: the node drops what it
    // still holds up to it and numbers new reports after it (a node that lost its data folder).
    data.nodeReportSeq(node.id).then(
      (seq) => {
        if (!this.closed && seq !== undefined) ws.send(JSON.stringify({ type: 'ack', seq, hello: true }));
      },
      (err: unknown) => log.warn({ node: node.name, err: String(err) }, 'reading a node\'s last report failed'),
    );
    const silence = new ChannelSilence(STATE_MS, socket);
    let turn = 0;
    const timer = setInterval(() => {
      if (++turn % PING_EVERY === 0) ws.ping(String(Date.now())); // node/clock-watch.ts
      if (!silence.silent()) return void this.sendState();
      clearInterval(timer);
      log.warn({ node: node.name, id: short }, `node channel silent for ${CHANNEL_SILENT_MS / 1000} s (a hung node, or its host gone): closed as lost`);
      ws.terminate();
    }, STATE_MS);
    const stopSignal = services.changes.on(() => void this.sendState(true));
    // Support's questions (node-inspect.ts) go to this node while its channel is open.
    const detach = services.inspect?.attach(node.id, node.name, (m) => ws.send(JSON.stringify(m)));
    void this.sendState();
    ws.on('message', (raw: Buffer) => this.onMessage(raw));
    ws.on('close', () => {
      this.closed = true;
      this.shared.openOf.delete(node.id);
      clearInterval(timer);
      stopSignal();
      detach?.();
      log.info({ node: node.name, id: short }, 'node disconnected');
      if (!this.stoppingSaid && !this.shared.closing) this.lost();
    });
    ws.on('error', () => ws.terminate());
  }

  private async sendState(changed = false): Promise<void> {
    if (this.closed) return;
    if (this.building) {
      // The timer's turn is skipped; a change is not (a pause, a limits change, a released grant).
      if (changed) this.changedWhileBuilding = true;
      return;
    }
    this.building = true;
    this.changedWhileBuilding = false;
    const { data, log } = this.shared.services;
    try {
      if (!(await data.getNode(this.node.id))) {
        this.ws.send(JSON.stringify({ type: 'removed' }));
        this.ws.close(1000, 'node removed');
        return;
      }
      const text = JSON.stringify(await buildState(this.shared.services, this.node, this.pace));
      if (text !== this.lastSent && !this.closed) {
        this.ws.send(text);
        this.lastSent = text;
      }
    } catch (err) {
      log.warn({ node: this.node.name, err: String(err) }, 'building a node\'s state failed');
    } finally {
      this.building = false;
      if (this.changedWhileBuilding) void this.sendState(true);
    }
  }

  private onMessage(raw: Buffer): void {
    if (!this.guard.frame(raw.length)) return; // over the node's limits (node-guard.ts)
    let msg: NodeMessage;
    try {
      msg = JSON.parse(String(raw));
    } catch {
      this.ws.close(1003, 'not JSON');
      return;
    }
    if (msg.type === 'claim') {
      const m = msg as Claim;
      this.guard.claim(() => this.claim(m), () => !this.closed && this.ws.send(JSON.stringify({ type: 'claimed', id: m.id, ok: false })));
      return;
    }
    if (msg.type === 'inspected') return this.shared.services.inspect?.answered(this.node.id, msg as Record<string, unknown>);
    if (msg.type === 'release') return this.release(msg as { key?: unknown; gen?: unknown });
    if (msg.type === 'stopping') return this.stopping();
    if (msg.type !== 'report' || typeof msg.seq !== 'number' || !Number.isSafeInteger(msg.seq) || msg.seq < 0) return;
    this.report(msg, msg.seq);
  }

  /**
   * A clean stop (SIGTERM, Ctrl-C), said after the node's last report: down from now on, not
   * NODE_UP_SECONDS later, so that no session is placed on it and no proxy request relayed to it
   * meanwhile. In order after its reports; its next contact (a restart) makes it up again.
   */
  private stopping(): void {
    if (this.stoppingSaid) return;
    this.stoppingSaid = true;
    this.markDown(() => this.shared.services.data.nodeStopped(this.node.id), 'info', 'node stopping: down until it is back', 'a node\'s stop');
  }

  /**
   * The channel ended without the node's stop: NODE_LOST_SECONDS later, unless the node was in
   * contact meanwhile (here or on another instance), it is down (store.nodeLost), so that no
   * session is placed on it and no proxy request relayed to it for the rest of the up window.
   */
  private lost(): void {
    const { services, lost } = this.shared;
    const timer = setTimeout(() => {
      lost.delete(timer);
      this.markDown(
        () => services.data.nodeLost(this.node.id, NODE_LOST_SECONDS),
        'warn',
        `node lost: its channel ended without a stop and nothing came from it for ${NODE_LOST_SECONDS} s; down until it is back`,
        'a lost node',
      );
    }, NODE_LOST_SECONDS * 1000);
    lost.add(timer);
  }

  /**
   * In order after the node's earlier messages, `record` marks it down in the store (false: nothing
   * changed); when it did, `said` is logged and every channel hears of it. A failure leaves the
   * node down only NODE_UP_SECONDS after its last report, as the warning says.
   */
  private markDown(record: () => Promise<boolean>, level: 'info' | 'warn', said: string, what: string): void {
    const { services } = this.shared;
    const node = this.node;
    this.inOrder(
      async () => {
        if (!(await record())) return;
        services.log[level]({ node: node.name }, said);
        services.changes.emit();
      },
      (err) => services.log.warn({ node: node.name, err: String(err) }, `recording ${what} failed; it is down ${NODE_UP_SECONDS} s after its last report`),
    );
  }

  /**
   * Runs `work` once everything queued before it for this node (reports, grant releases, its
   * stop; on any of its channels) is done; `failed` takes its error.
   */
  private inOrder(work: () => Promise<void>, failed: (err: unknown) => void): void {
    const { chains } = this.shared;
    chains.set(this.node.id, (chains.get(this.node.id) ?? Promise.resolve()).then(work).catch(failed));
  }

  /** After the reports sent before it (same chain), so the grant's `used` counts all it moved. */
  private release({ key, gen }: { key?: unknown; gen?: unknown }): void {
    const { services } = this.shared;
    const { data, log } = services;
    const node = this.node;
    if (typeof key !== 'string' || key.length > 300 || typeof gen !== 'number' || !Number.isSafeInteger(gen) || !this.guard.release()) return;
    const [customer, client = ''] = key.split('\u0000');
    this.inOrder(
      async () => {
        if (!this.guard.next() || !(await data.releaseGrant(node.id, customer, client, gen))) return;
        log.debug({ node: node.name }, 'a node gave back an unused grant');
        // The other nodes on this instance may be granted it now (others hear of it from the store's notice).
        services.changes.emit();
      },
      (err) => log.warn({ node: node.name, err: String(err) }, 'releasing a node grant failed; the node asks again'),
    );
  }

  private report(msg: NodeMessage, seq: number): void {
    const { openOf, audit, services } = this.shared;
    const { data } = services;
    const { node, guard, boot } = this;
    if (!guard.report(seq)) return; // not applied, not acknowledged: the node resends it
    openOf.set(node.id, { zone: node.zone, node: node.name, count: openCount((msg as { open?: unknown }).open) });
    audit.carried(node.id, (msg as { relayed?: unknown }).relayed);
    const p = msg.ports ?? {};
    const ports = portsOf(p);
    // The node's geo relay listener, its listeners' TLS (certificate pins) and its clock's skew (to the second), stored when they change.
    const nodeSays = nodeFacts(p as Record<string, unknown>);
    const facts = JSON.stringify(nodeSays);
    const storeFacts = facts !== this.factsSeen;
    this.factsSeen = facts;
    // The channel's first report names the node's process (crash-repair.ts).
    const hello = this.helloSeen ? null : (msg as { boot?: unknown; boot_seq?: unknown });
    this.helloSeen = true;
    this.inOrder(
      async () => {
        if (!guard.next(seq)) return;
        await data.touchNode(node.id, ports);
        if (hello) await boot.hello(hello.boot, hello.boot_seq);
        if (storeFacts) {
          await data.setNodeFacts(node.id, nodeSays).catch((err: unknown) => {
            this.factsSeen = ''; // stored with a later report
            throw err;
          });
        }
        if (seq === 0) return; // contact only
        await applyReport(services, audit, node, { seq, counters: msg.counters, events: msg.events }, boot.stale(seq));
        await boot.applied(seq);
        if (!this.closed) this.ws.send(JSON.stringify({ type: 'ack', seq }));
      },
      (err) => guard.failed(seq, err), // logged there, at most once a second
    );
  }

  /**
   * Central max_sessions: a node asks before a session's first connection opens. Granted when
   * the client has no max_sessions, or fewer other active sessions anywhere (store.claimSession).
   * Also read-your-writes: the answer carries the session's row as stored now (null: not placed
   * on this node) and its customer's limits, so what any instance answered 201 or 200 for holds
   * for this connection. A claim that fails says nothing of the session (the node keeps its state).
   */
  private async claim(m: Claim): Promise<void> {
    const { data } = this.shared.services;
    if (typeof m.id !== 'number' || typeof m.session !== 'string' || this.closed) return;
    let answer: Record<string, unknown> = { ok: false };
    try {
      const placed = (await data.placementOf(m.session)) === this.node.id;
      const row = placed ? await data.getSession(m.session) : undefined;
      if (!row) answer = { ok: false, session: m.session, row: null };
      else {
        const limits = await limitsOf(data, row.customer_id);
        // Clients (extension): the client's override holds over the template, and its record goes along (read-your-writes).
        const client = (await data.getClientControl(row.customer_id, row.client_id)) ?? null;
        const max = mergeClientLimits(limits.client ?? undefined, client ?? undefined)?.max_sessions;
        const active = Array.isArray(m.active) ? m.active.filter((x): x is string => typeof x === 'string').slice(0, 10_000) : [];
        const ok = max == null ? true : await data.claimSession(this.node.id, row.id, active, max);
        answer = { ok, session: row.id, row, limits, client };
      }
    } catch (err) {
      this.guard.claimFailed(err);
    }
    if (!this.closed) this.ws.send(JSON.stringify({ type: 'claimed', id: m.id, ...answer }));
  }
}
