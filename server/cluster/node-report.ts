// Applying a node's report (node-channel.ts): the counters and events of the sessions placed on
// the node (any other session's are dropped), added with the report's seq in one transaction,
// then usage history, metrics and the relay audit, once. Also the checked facts a report carries
// (open connections, listeners, the node's clock).
import { eventInsert, type EventInput, type EventInsert, type EventType, type SessionRow } from '../domain.ts';
import { isoNow } from '../time.ts';
import type { NodeInfo, NodeFacts, NodeReportAdd } from '../store/store.ts';
import type { RelayAudit } from './relay-audit.ts';
import type { NodeChannelDeps } from './node-state.ts';

const EVENT_TYPES = new Set<EventType>(['session_start', 'session_stats', 'session_heartbeat', 'session_end']);
const MAX_EVENTS_PER_REPORT = 10_000;

export type CounterDelta = { up?: number; down?: number; status?: SessionRow['status']; duration?: number; connections?: number };

/** A frame from a node, as parsed (every field still to be checked). */
export type NodeMessage = {
  type?: string;
  seq?: unknown;
  ports?: Record<string, number | string | boolean | null>;
  counters?: Record<string, CounterDelta>;
  events?: EventInput[];
};

const pinOrNull = (v: unknown) => (typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? v : null);

/** A year, ms: a skew beyond it is no clock reading, and is stored as unknown. */
const MAX_SKEW_MS = 366 * 86_400_000;

/** What a node's report says of its relay listener, its listeners' TLS and its clock, checked. */
export function nodeFacts(p: Record<string, unknown>): NodeFacts {
  const port = p.relay_port;
  const skew = p.clock_skew_ms;
  return {
    relay_port: typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536 ? port : null,
    relay_pcs: pinOrNull(p.relay_pcs),
    tls: p.tls === true,
    tls_pcs: p.tls === true ? pinOrNull(p.tls_pcs) : null,
    clock_skew_ms: typeof skew === 'number' && Number.isInteger(skew) && Math.abs(skew) <= MAX_SKEW_MS ? skew : null,
  };
}

/** The inbound ports a report names. */
export function portsOf(p: Record<string, number | string | boolean | null>): { vless_ws_port: number | null; vless_tcp_port: number | null; proxy_port: number | null } {
  return {
    vless_ws_port: typeof p.vless_ws_port === 'number' ? p.vless_ws_port : null,
    vless_tcp_port: typeof p.vless_tcp_port === 'number' ? p.vless_tcp_port : null,
    proxy_port: typeof p.proxy_port === 'number' ? p.proxy_port : null,
  };
}

/**
 * A report's open connections, summed: every session placed on a node is in the node's zone, so
 * the count is labelled with the zone the catalogue gives the node, never one the node names.
 */
export function openCount(v: unknown): number {
  if (!Array.isArray(v)) return 0;
  let total = 0;
  for (const o of v.slice(0, 1000)) {
    const count = (o as { count?: unknown })?.count;
    if (typeof count === 'number' && Number.isSafeInteger(count) && count > 0) total += count;
  }
  return Math.min(total, Number.MAX_SAFE_INTEGER);
}

const nonNeg = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/** The counter additions of a report, for sessions placed on the node; statuses only when current. */
function addsOf(counters: Record<string, CounterDelta>, placed: Map<string, SessionRow>, moved: Map<string, SessionRow>, stale: boolean): NodeReportAdd[] {
  const adds: NodeReportAdd[] = [];
  for (const [id, d] of Object.entries(counters)) {
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
  return adds;
}

/** The report's events, stamped now, for the same transaction (only session_stats of stale or moved sessions). */
function eventsOf(list: EventInput[], placed: Map<string, SessionRow>, moved: Map<string, SessionRow>, stale: boolean): EventInsert[] {
  const createdAt = isoNow();
  const events: EventInsert[] = [];
  for (const e of list.slice(0, MAX_EVENTS_PER_REPORT)) {
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
  return events;
}

/**
 * Applies one report. `stale`: a report of the node's previous process whose sessions were
 * repaired already (crash-repair.ts): its bytes count, its statuses and lifecycle events are dropped.
 */
export async function applyReport(services: NodeChannelDeps, audit: RelayAudit, node: NodeInfo, msg: { seq: number; counters?: Record<string, CounterDelta>; events?: EventInput[] }, stale = false): Promise<void> {
  const { data } = services;
  const placed = new Map((await data.sessionsOnNode(node.id)).map((s) => [s.id, s]));
  // Sessions moved away from this node (crash-repair.ts): its late reports add their bytes only.
  const moved = new Map((await data.sessionsMovedFrom(node.id)).map((s) => [s.id, s]));
  for (const [id, s] of moved) if (!placed.has(id)) placed.set(id, s);
  const adds = addsOf(msg.counters ?? {}, placed, moved, stale);
  const events = eventsOf(msg.events ?? [], placed, moved, stale);
  // Counters, events and the node's last applied seq in one transaction: a report resent after
  // a lost acknowledgement (or a crash before it) adds no byte and no event twice, loses none.
  const stored = await data.applyNodeReport(node.id, msg.seq, adds, events);
  if (stored === false) return;
  services.announce(stored.map((e, i) => ({ customerId: events[i].customer_id, event: e })));
  // Usage history: the report's deltas, once (a resent report returned above), as this node's.
  for (const a of adds) services.usage?.add(a.id, node.name, a.uploaded_bytes, a.downloaded_bytes);
  // Usage thresholds: the sessions whose counters moved are checked by the next pass.
  for (const a of adds) if (a.uploaded_bytes > 0 || a.downloaded_bytes > 0) services.thresholds?.touch(a.id);
  // Metrics: the report's bytes by zone and node, once.
  for (const a of adds) services.metrics.moved(placed.get(a.id)!.zone, node.name, a.uploaded_bytes, a.downloaded_bytes);
  audit.counted(node.id, adds.map((a) => [a.id, a.uploaded_bytes + a.downloaded_bytes]));
}
