// The control plane's end of a data-plane node's channel (`vpn-access node run`, server/node/run.ts):
// a WebSocket at NODE_CHANNEL_PATH on the API port, authenticated by the node's token (its own
// kind, hashed in the nodes table; API tokens never match). Works on SQLite and PostgreSQL alike
// through services.data. Messages are JSON, one per frame:
//
//   node → control plane
//     {type:'report', seq, ports (with relay_port, relay_pcs, tls, tls_pcs), open:[{zone,count}], counters:{[session]:{up,down,status?,duration?,connections?}}, events:[...]}
//       at least every second: it is the node's contact (touchNode with its ports); seq 0 is
//       contact only (nothing to count), not acknowledged. A channel's first report also names
//       the node's process: {boot, boot_seq} (crash-repair.ts).
//       `up`/`down` are bytes moved since the node's previous report: they are ADDED to the
//       session's stored counters, never written over them. Each report is acknowledged by its
//       seq; a seq at or below the last one applied for this node is acknowledged again and
//       otherwise ignored, so a report resent after a lost acknowledgement is not counted twice.
//       Any report may carry relayed:{[entry]:{[session hash]:{up,down}}}, what the node's geo relay
//       carried for other entries since its last report (relay-audit.ts; lost with its frame).
//   control plane → node
//     {type:'state', sessions, limits, sums, bases?, shares?, shareSeq?, zone, public_host, zones, relays, relay_entries}
//       the sessions placed on the node, their customers' limits, counter sums and the node's
//       shares of them (shares.ts); its zone and public host (its certificate's name), the zone
//       catalogue and the other up nodes' geo relays (geo.ts); sent on connect and whenever it changed (checked every
//       STATE_MS, and at once after a pause or limits change made through this process or,
//       on PostgreSQL, announced by another instance's NOTIFY on vad_sessions/vad_limits/vad_nodes);
//     {type:'ack', seq}  (also on connect, with hello: the last seq applied for the node);
//     {type:'claimed', id, ok, session, row, limits}  the answer to a node's {type:'claim', id, session, active:[ids]}:
//       may the session's first connection open (central max_sessions, store.claimSession), with
//       the session's row as stored now (null: not placed on the node) and its customer's limits
//       (read-your-writes);
//     {type:'removed'}  the node was removed from the catalogue: it cuts all and stops.
//   node → control plane, besides reports and claims:
//     {type:'release', key, gen}  the node moves none of that customer's (or client's) bytes now
//       and gives back its grant beyond KEEP_IDLE (store.releaseGrant), in order after its reports.
//
// A node may act only on sessions placed on it: counters and events of any other session are dropped.
// What it may cost (one live channel, frame size, rates, claims in flight) is bounded in node-guard.ts.
// The last applied seq per node is stored with the node (nodes.report_seq), in the transaction
// that adds the report's counters and stores its events, so no instance of the cluster counts a
// report or records its events twice, and a report resent after a crash loses none.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { eventInsert, type EventInput, type EventInsert, type EventType, type LimitScope, type LimitValues, type SessionRow } from '../domain.ts';
import { isoNow } from '../time.ts';
import { periodOf } from '../contract/period.ts';
import { wallClock } from '../time.ts';
import type { NodeInfo, NodeListeners, NodeReportAdd } from '../store/store.ts';
import { GrantPace, nodeShares, type WireShare } from './shares.ts';
import { relayTargets, type RelayTarget } from './geo.ts';
import { RelayAudit } from './relay-audit.ts';
import type { ZoneInfo } from '../domain.ts';
import { NodeBoot, type RepairDeps, startRepairSweep } from './crash-repair.ts';
import { createNodeGuards, NODE_FRAME_LIMIT, type ChannelGuard } from './node-guard.ts';
import type { Metrics } from '../metrics.ts';
import type { UsageHistory } from '../usage/history.ts';
import type { ServeGeoRoutes } from './geo.ts';
import { NODE_CHANNEL_PATH } from './paths.ts';

export { NODE_CHANNEL_PATH, NODE_WS_PATH } from './paths.ts';

/** How often the state sent to a node is rebuilt and compared with the last one sent. */
const STATE_MS = 250;
const EVENT_TYPES = new Set<EventType>(['session_start', 'session_stats', 'session_heartbeat', 'session_end']);
const SCOPES: LimitScope[] = ['global', 'client', 'session'];
const MAX_EVENTS_PER_REPORT = 10_000;

/** What the channel uses of the server's services (services.ts builds them). */
export interface NodeChannelDeps extends RepairDeps {
  metrics: Pick<Metrics, 'openConnections' | 'registry' | 'moved'>;
  geo: Pick<ServeGeoRoutes, 'nodes' | 'entries'>;
  zones: { list(): ZoneInfo[] };
  usage: Pick<UsageHistory, 'add'> | null;
}

export interface NodeState {
  type: 'state';
  sessions: SessionRow[];
  limits: Record<string, Partial<Record<LimitScope, LimitValues | null>>>;
  /** Counter sums by customer id, and by `customer\u0000client`. */
  sums: Record<string, { up: number; down: number }>;
  /** Periodic caps: the recorded bases of the current periods, by quotaBaseKey. */
  bases?: Record<string, { up: number; down: number }>;
  /**
   * The node's share of each limited customer (key its id) and client (`customer\u0000client`):
   * byte grants and speed shares (shares.ts). A grant's `left` is counted from the node's
   * reports up to `shareSeq`: the node takes off what it moved after that.
   */
  shares?: Record<string, WireShare>;
  shareSeq?: number;
  /** The geo proxy (geo.ts): the node's own zone, the zone catalogue, and the other up nodes' relays with grants for this node. */
  zone?: string;
  zones?: ZoneInfo[];
  relays?: RelayTarget[];
  /** Who may use this node's relay listener: the catalogue's node ids and `serve` (geo.ts). */
  relay_entries?: string[];
  /** The node's public host in the catalogue: its self-signed certificate is made for it. */
  public_host?: string;
}

const pinOrNull = (v: unknown) => (typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? v : null);

/** What a node's report says of its relay listener and its listeners' TLS, checked. */
function listenerFacts(p: Record<string, unknown>): NodeListeners {
  const port = p.relay_port;
  return {
    relay_port: typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536 ? port : null,
    relay_pcs: pinOrNull(p.relay_pcs),
    tls: p.tls === true,
    tls_pcs: p.tls === true ? pinOrNull(p.tls_pcs) : null,
  };
}

export const quotaBaseKey = (customerId: string, scope: LimitScope, entityId: string, periodKey: number) => `${customerId}\u0000${scope}\u0000${entityId}\u0000${periodKey}`;

type CounterDelta = { up?: number; down?: number; status?: SessionRow['status']; duration?: number; connections?: number };

export interface NodeChannel {
  /** Takes the upgrade when its path is the channel's; returns false otherwise. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  close(): void;
}

/**
 * A report's open connections, summed: every session placed on a node is in the node's zone, so
 * the count is labelled with the zone the catalogue gives the node, never one the node names.
 */
function openCount(v: unknown): number {
  if (!Array.isArray(v)) return 0;
  let total = 0;
  for (const o of v.slice(0, 1000)) {
    const count = (o as { count?: unknown })?.count;
    if (typeof count === 'number' && Number.isSafeInteger(count) && count > 0) total += count;
  }
  return Math.min(total, Number.MAX_SAFE_INTEGER);
}

const nonNeg = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

export function createNodeChannel(services: NodeChannelDeps): NodeChannel {
  const { data, log } = services;
  const wss = new WebSocketServer({ noServer: true, maxPayload: NODE_FRAME_LIMIT });
  const guards = createNodeGuards(log);
  /** Reports are applied one at a time per node (a resend must see the seq of the one before). */
  const chains = new Map<string, Promise<void>>();
  /** Each connected node's open connections per zone, from its last report (metrics). */
  const openOf = new Map<string, { zone: string; node: string; count: number }>();
  const sweep = startRepairSweep(services);
  services.metrics.openConnections(() => [...openOf.values()]);
  /** What exits carried for each entry against what the entry counted (relay-audit.ts). */
  const audit = new RelayAudit(log, services.metrics.registry);

  /** A customer's three limits records as the node gets them (null: not set). */
  async function limitsOf(customerId: string): Promise<NodeState['limits'][string]> {
    const values = await Promise.all(SCOPES.map((scope) => data.getLimits(customerId, scope)));
    return Object.fromEntries(SCOPES.map((scope, i) => [scope, values[i] ?? null]));
  }

  async function buildState(node: NodeInfo, pace: GrantPace): Promise<NodeState> {
    const sessions = await data.sessionsOnNode(node.id);
    const limits: NodeState['limits'] = {};
    const sums: NodeState['sums'] = {};
    for (const s of sessions) {
      if (!limits[s.customer_id]) {
        limits[s.customer_id] = await limitsOf(s.customer_id);
        const c = await data.sumCounters(s.customer_id);
        sums[s.customer_id] = { up: c.uploaded_bytes, down: c.downloaded_bytes };
      }
      const key = `${s.customer_id}\u0000${s.client_id}`;
      if (!sums[key]) {
        const c = await data.sumCounters(s.customer_id, s.client_id);
        sums[key] = { up: c.uploaded_bytes, down: c.downloaded_bytes };
      }
    }
    // Periodic caps: the bases of the current periods of every entity a session here counts for.
    const bases: NonNullable<NodeState['bases']> = {};
    const now = wallClock();
    for (const s of sessions) {
      for (const scope of SCOPES) {
        const period = periodOf(limits[s.customer_id]?.[scope] ?? undefined, now);
        if (!period) continue;
        const periodKey = period.kind === 'rolling_30d' ? 0 : period.start;
        const entity = scope === 'global' ? s.customer_id : scope === 'client' ? s.client_id : s.id;
        const key = quotaBaseKey(s.customer_id, scope, entity, periodKey);
        if (key in bases) continue;
        const base = await data.quotaBase(s.customer_id, scope, entity, periodKey);
        if (base) bases[key] = base;
      }
    }
    // Cluster limits: the last report applied for the node is read before the grants, so what
    // they count as used includes at least the reports up to it (the node subtracts the rest).
    const shareSeq = (await data.nodeReportSeq(node.id)) ?? 0;
    const shares = await nodeShares(data, node.id, sessions, limits, bases, quotaBaseKey, pace, now);
    const relays = relayTargets(services.geo.nodes, node.id, node.id);
    return {
      type: 'state',
      sessions,
      limits,
      sums,
      zone: node.zone,
      public_host: node.public_host,
      zones: services.zones.list(),
      relays,
      relay_entries: services.geo.entries,
      ...(Object.keys(bases).length ? { bases } : {}),
      ...(Object.keys(shares).length ? { shares, shareSeq } : {}),
    };
  }

  /**
   * `stale`: a report of the node's previous process whose sessions were repaired already
   * (crash-repair.ts): its bytes count, its statuses and lifecycle events are dropped.
   */
  async function apply(node: NodeInfo, msg: { seq: number; counters?: Record<string, CounterDelta>; events?: EventInput[] }, stale = false): Promise<void> {
    const placed = new Map((await data.sessionsOnNode(node.id)).map((s) => [s.id, s]));
    // Sessions moved away from this node (crash-repair.ts): its late reports add their bytes only.
    const moved = new Map((await data.sessionsMovedFrom(node.id)).map((s) => [s.id, s]));
    for (const [id, s] of moved) if (!placed.has(id)) placed.set(id, s);
    const adds: NodeReportAdd[] = [];
    for (const [id, d] of Object.entries(msg.counters ?? {})) {
      if (!placed.has(id) || !d || typeof d !== 'object') continue;
      adds.push({
        id,
        uploaded_bytes: nonNeg(d.up),
        downloaded_bytes: nonNeg(d.down),
        ...(!stale && !moved.has(id) && (d.status === 'active' || d.status === 'idle' || d.status === 'ended' || d.status === 'created') ? { status: d.status } : {}),
        ...(typeof d.duration === 'number' ? { duration: nonNeg(d.duration) } : {}),
        ...(typeof d.connections === 'number' ? { connections: nonNeg(d.connections) } : {}),
      });
    }
    // The report's events, stamped now, for the same transaction.
    const createdAt = isoNow();
    const events: EventInsert[] = [];
    for (const e of (msg.events ?? []).slice(0, MAX_EVENTS_PER_REPORT)) {
      const row = e && placed.get(e.sessionId);
      if (!row || !EVENT_TYPES.has(e.type) || ((stale || moved.has(row.id)) && e.type !== 'session_stats')) continue;
      events.push(eventInsert({
        customerId: row.customer_id,
        sessionId: row.id,
        type: e.type,
        duration: nonNeg(e.duration),
        uploaded_bytes: nonNeg(e.uploaded_bytes),
        downloaded_bytes: nonNeg(e.downloaded_bytes),
      }, createdAt));
    }
    // Counters, events and the node's last applied seq in one transaction: a report resent after
    // a lost acknowledgement (or a crash before it) adds no byte and no event twice, loses none.
    const stored = await data.applyNodeReport(node.id, msg.seq, adds, events);
    if (stored === false) return;
    services.announce(stored.map((e, i) => ({ customerId: events[i].customer_id, event: e })));
    // Usage history: the report's deltas, once (a resent report returned above), as this node's.
    for (const a of adds) services.usage?.add(a.id, node.name, a.uploaded_bytes, a.downloaded_bytes);
    // Metrics: the report's bytes by zone and node, once.
    for (const a of adds) services.metrics.moved(placed.get(a.id)!.zone, node.name, a.uploaded_bytes, a.downloaded_bytes);
    audit.counted(node.id, adds.map((a) => [a.id, a.uploaded_bytes + a.downloaded_bytes]));
  }

  function serveNode(ws: WebSocket, first: NodeInfo, guard: ChannelGuard): void {
    const node = first;
    const short = node.id.slice(0, 8);
    log.info({ node: node.name, id: short }, 'node connected');
    let lastSent = '';
    let listenersSeen = '';
    let closed = false;
    const pace = new GrantPace();
    const boot = new NodeBoot(services, node);
    let helloSeen = false;
    let building = false;
    const sendState = async () => {
      if (closed || building) return;
      building = true;
      try {
        if (!(await data.getNode(node.id))) {
          ws.send(JSON.stringify({ type: 'removed' }));
          ws.close(1000, 'node removed');
          return;
        }
        const text = JSON.stringify(await buildState(node, pace));
        if (text !== lastSent && !closed) {
          ws.send(text);
          lastSent = text;
        }
      } catch (err) {
        log.warn({ node: node.name, err: String(err) }, 'building a node\'s state failed');
      } finally {
        building = false;
      }
    };
    // The last report applied for this node, as an acknowledgement: the node drops what it
    // still holds up to it and numbers new reports after it (a node that lost its data folder).
    data.nodeReportSeq(node.id).then(
      (seq) => {
        if (!closed && seq !== undefined) ws.send(JSON.stringify({ type: 'ack', seq, hello: true }));
      },
      (err: unknown) => log.warn({ node: node.name, err: String(err) }, 'reading a node\'s last report failed'),
    );
    const timer = setInterval(() => void sendState(), STATE_MS);
    const onSignal = () => void sendState();
    const stopSignal = services.changes.on(onSignal);
    void sendState();

    ws.on('message', (raw: Buffer) => {
      if (!guard.frame(raw.length)) return; // over the node's limits (node-guard.ts)
      let msg: { type?: string; seq?: unknown; ports?: Record<string, number | string | boolean | null>; counters?: Record<string, CounterDelta>; events?: EventInput[] };
      try {
        msg = JSON.parse(String(raw));
      } catch {
        ws.close(1003, 'not JSON');
        return;
      }
      if (msg.type === 'claim') {
        const m = msg as { id?: unknown; session?: unknown; active?: unknown };
        guard.claim(() => claim(m), () => !closed && ws.send(JSON.stringify({ type: 'claimed', id: m.id, ok: false })));
        return;
      }
      if (msg.type === 'release') {
        // After the reports sent before it (same chain), so the grant's `used` counts all it moved.
        const { key, gen } = msg as { key?: unknown; gen?: unknown };
        if (typeof key !== 'string' || key.length > 300 || typeof gen !== 'number' || !Number.isSafeInteger(gen) || !guard.release()) return;
        const [customer, client = ''] = key.split('\u0000');
        const prev = chains.get(node.id) ?? Promise.resolve();
        chains.set(node.id, prev.then(async () => {
          if (guard.next() && await data.releaseGrant(node.id, customer, client, gen)) log.debug({ node: node.name }, 'a node gave back an unused grant');
        }).catch((err: unknown) => log.warn({ node: node.name, err: String(err) }, 'releasing a node grant failed; the node asks again')));
        return;
      }
      if (msg.type !== 'report' || typeof msg.seq !== 'number' || !Number.isSafeInteger(msg.seq) || msg.seq < 0) return;
      const seq = msg.seq;
      if (!guard.report(seq)) return; // not applied, not acknowledged: the node resends it
      openOf.set(node.id, { zone: node.zone, node: node.name, count: openCount((msg as { open?: unknown }).open) });
      audit.carried(node.id, (msg as { relayed?: unknown }).relayed);
      const p = msg.ports ?? {};
      const ports = {
        vless_ws_port: typeof p.vless_ws_port === 'number' ? p.vless_ws_port : null,
        vless_tcp_port: typeof p.vless_tcp_port === 'number' ? p.vless_tcp_port : null,
        proxy_port: typeof p.proxy_port === 'number' ? p.proxy_port : null,
      };
      // The node's geo relay listener and its listeners' TLS (ports and certificate pins), stored when they change.
      const listeners = listenerFacts(p as Record<string, unknown>);
      const facts = JSON.stringify(listeners);
      const storeListeners = facts !== listenersSeen;
      listenersSeen = facts;
      // The channel's first report names the node's process (crash-repair.ts).
      const hello = helloSeen ? null : (msg as { boot?: unknown; boot_seq?: unknown });
      helloSeen = true;
      const prev = chains.get(node.id) ?? Promise.resolve();
      const next = prev
        .then(async () => {
          if (!guard.next(seq)) return;
          await data.touchNode(node.id, ports);
          if (hello) await boot.hello(hello.boot, hello.boot_seq);
          if (storeListeners) {
            await data.setNodeListeners(node.id, listeners).catch((err: unknown) => {
              listenersSeen = ''; // stored with a later report
              throw err;
            });
          }
          if (seq === 0) return; // contact only
          await apply(node, { seq, counters: msg.counters, events: msg.events }, boot.stale(seq));
          await boot.applied(seq);
          if (!closed) ws.send(JSON.stringify({ type: 'ack', seq }));
        })
        .catch((err: unknown) => guard.failed(seq, err)); // logged there, at most once a second
      chains.set(node.id, next);
    });
    /**
     * Central max_sessions: a node asks before a session's first connection opens. Granted when
     * the client has no max_sessions, or fewer other active sessions anywhere (store.claimSession).
     */
    /**
     * Also read-your-writes: the answer carries the session's row as stored now (null: not placed
     * on this node) and its customer's limits, so what any instance answered 201 or 200 for holds
     * for this connection. A claim that fails says nothing of the session (the node keeps its state).
     */
    const claim = async (m: { id?: unknown; session?: unknown; active?: unknown }) => {
      if (typeof m.id !== 'number' || typeof m.session !== 'string' || closed) return;
      let answer: Record<string, unknown> = { ok: false };
      try {
        const placed = (await data.placementOf(m.session)) === node.id;
        const row = placed ? await data.getSession(m.session) : undefined;
        if (!row) answer = { ok: false, session: m.session, row: null };
        else {
          const limits = await limitsOf(row.customer_id);
          const max = limits.client?.max_sessions;
          const active = Array.isArray(m.active) ? m.active.filter((x): x is string => typeof x === 'string').slice(0, 10_000) : [];
          const ok = max == null ? true : await data.claimSession(node.id, row.id, active, max);
          answer = { ok, session: row.id, row, limits };
        }
      } catch (err) {
        guard.claimFailed(err);
      }
      if (!closed) ws.send(JSON.stringify({ type: 'claimed', id: m.id, ...answer }));
    };
    ws.on('close', () => {
      closed = true;
      openOf.delete(node.id);
      clearInterval(timer);
      stopSignal();
      log.info({ node: node.name, id: short }, 'node disconnected');
    });
    ws.on('error', () => ws.terminate());
  }

  return {
    handleUpgrade(req, socket, head) {
      const path = (req.url ?? '').split('?')[0];
      if (path !== NODE_CHANNEL_PATH) return false;
      const auth = req.headers.authorization ?? '';
      const token = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
      const refuse = (status: number, text: string) => {
        socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      };
      if (!token) {
        refuse(401, 'Unauthorized');
        return true;
      }
      if (guards.early(token)) {
        refuse(429, 'Too Many Requests'); // a node opening channels too often: not even looked up
        return true;
      }
      data.findNodeByToken(token).then(
        (node) => {
          if (!node) return refuse(401, 'Unauthorized');
          if (!guards.admit(node, token)) return refuse(429, 'Too Many Requests');
          wss.handleUpgrade(req, socket, head, (ws) => serveNode(ws, node, guards.attach(node, ws)));
        },
        (err: unknown) => {
          log.warn({ err: String(err) }, 'looking up a node token failed');
          refuse(503, 'Service Unavailable');
        },
      );
      return true;
    },
    close() {
      sweep.stop();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}
