// Crash repair (server/cluster/crash-repair.ts has the rules) of a node restarted as a new process, a
// node silent for NODE_SILENT_SECONDS, a detached node, and what this instance's data plane carried when
// its previous process died. A repaired session becomes what its last connection closing would have made
// it, with session_stats and session_end. Each repair is conditional on what it changes (session still
// `active`, placement still on the old node, boot id not yet recorded): racing instances repair it once.
import type { SessionEvent } from '../../contract/schemas.ts';
import { eventInsert, type EventInsert, type SessionRow } from '../../domain.ts';
import { isoNow } from '../../time.ts';
import { CHANNELS } from '../sql/channels.ts';
import { all, bool, dialect, get, marks, run, runNotifying, tx, type Op, type Param } from '../sql/op.ts';
import { insertEvents } from './events.ts';
import { nodeOps, UP_SQL, type NodeInfo } from './nodes.ts';

/** How long without any report a node is taken for dead: its sessions are repaired and moved. */
export const NODE_SILENT_SECONDS = 15;

/** An event a repair stored, with its customer (to wake that customer's streams). */
export interface RepairedEvent {
  customerId: string;
  event: SessionEvent;
}

/** What a node said of its process in its channel's first report (store.nodeHello). */
export type NodeHello = 'same' | 'new' | 'new_after_repair';

/** The silent-node repair sweep's PostgreSQL advisory lock key (arbitrary). */
const REPAIR_LOCK_KEY = 0x7661645f726570n; // "vad_rep"

/**
 * The active sessions `where` names go idle or end as their last connection closing would (plus `set`),
 * each with session_stats then session_end (creation order, stored counters) in the same transaction.
 */
function* repairWhere(set: string, where: string, ...args: Param[]): Op<RepairedEvent[]> {
  type Repaired = Pick<SessionRow, 'id' | 'customer_id' | 'duration' | 'uploaded_bytes' | 'downloaded_bytes'> & { seq: number };
  const rows = yield* all<Repaired>(
    `UPDATE sessions SET status = CASE WHEN reusable THEN 'idle' ELSE 'ended' END, ${set}
     WHERE status = 'active' AND ${where} RETURNING seq, id, customer_id, duration, uploaded_bytes, downloaded_bytes`,
    ...args,
  );
  const createdAt = isoNow();
  const inserts: EventInsert[] = [];
  for (const { seq: _seq, id: sessionId, customer_id: customerId, ...counters } of rows.sort((x, y) => x.seq - y.seq)) {
    for (const type of ['session_stats', 'session_end'] as const) inserts.push(eventInsert({ customerId, sessionId, type, ...counters }, createdAt));
  }
  const stored = yield* insertEvents(inserts);
  return stored.map((event, i) => ({ customerId: inserts[i].customer_id, event }));
}

/** The active sessions placed on a node go idle or end, with their events; claims before `claimsBefore` (epoch ms) are released. */
export function* repairPlaced(nodeId: string, claimsBefore: number): Op<RepairedEvent[]> {
  const placed = 'id IN (SELECT session_id FROM session_placements WHERE node_id = ?)';
  const events = yield* repairWhere('claimed_at = NULL', placed, nodeId);
  yield* run(`UPDATE sessions SET claimed_at = NULL WHERE claimed_at < ? AND ${placed}`, Number.isFinite(claimsBefore) ? claimsBefore : Number.MAX_SAFE_INTEGER, nodeId);
  return events;
}

/** The sessions of a node that did not end move to the least-loaded up node of its zone, if any. */
export function* replaceFrom(nodeId: string, zone: string): Op<void> {
  // The other up nodes of the zone and their sessions, the least loaded first (as upNodes orders them).
  const targets = yield* all<{ id: string; c: number }>(
    `SELECT n.id, (SELECT COUNT(*) FROM session_placements p WHERE p.node_id = n.id) AS c FROM nodes n
     WHERE n.zone = ? AND ${UP_SQL('n')} AND n.id <> ? ORDER BY c, n.name`,
    zone,
    nodeId,
  );
  if (targets.length === 0) return;
  const load = new Map(targets.map((n) => [n.id, n.c]));
  const ids = yield* all<{ session_id: string }>(
    `SELECT p.session_id FROM session_placements p JOIN sessions s ON s.id = p.session_id WHERE p.node_id = ? AND s.status <> 'ended' ORDER BY s.seq`,
    nodeId,
  );
  for (const { session_id } of ids) {
    const to = [...load].sort((a, b) => a[1] - b[1])[0];
    yield* run('UPDATE session_placements SET node_id = ?, placed_at = ?, moved_from = node_id WHERE session_id = ? AND node_id = ?', to[0], isoNow(), session_id, nodeId);
    load.set(to[0], to[1] + 1);
  }
}

/** A node's channel opened by process `boot`. 'same' forgets a silent-time repair: it carries its sessions again. */
function* nodeHello(nodeId: string, boot: string): Op<NodeHello> {
  const r = yield* get<{ boot_id: string | null; boot_repaired: unknown }>('SELECT boot_id, boot_repaired FROM nodes WHERE id = ?', nodeId);
  if (r?.boot_id === boot) {
    if (bool(r.boot_repaired)) yield* run('UPDATE nodes SET boot_repaired = ? WHERE id = ? AND boot_id = ?', false, nodeId, boot);
    return 'same';
  }
  return r && bool(r.boot_repaired) ? 'new_after_repair' : 'new';
}

/**
 * Records a node's new process `boot`; the first caller to record it (conditional UPDATE) repairs what the
 * previous process carried, releasing claims before `claimsBefore` (epoch ms). False: already recorded.
 */
const repairRestartedNode = tx(function* (nodeId: string, boot: string, claimsBefore: number): Op<RepairedEvent[] | false> {
  const recorded = yield* run('UPDATE nodes SET boot_id = ?, boot_repaired = ? WHERE id = ? AND (boot_id IS NULL OR boot_id <> ?)', boot, false, nodeId, boot);
  if (recorded === 0) return false;
  return yield* repairPlaced(nodeId, claimsBefore);
});

/** Nodes silent for NODE_SILENT_SECONDS with something to repair or move. */
const silentNodes = () => all<{ id: string; zone: string }>(
  `SELECT DISTINCT n.id, n.zone FROM nodes n JOIN session_placements p ON p.node_id = n.id JOIN sessions s ON s.id = p.session_id
   WHERE n.last_contact < {ago:${NODE_SILENT_SECONDS}} AND (s.status = 'active' OR s.claimed_at IS NOT NULL OR (s.status <> 'ended' AND EXISTS (
     SELECT 1 FROM nodes u WHERE u.zone = n.zone AND u.id <> n.id AND ${UP_SQL('u')})))`,
);

const sweep = tx(function* (): Op<RepairedEvent[]> {
  // One PostgreSQL instance sweeps at a time, the others skip the pass; SQLite has one writer.
  if ((yield* dialect()) === 'postgres') {
    const held = yield* get<{ ok: unknown }>('SELECT pg_try_advisory_xact_lock(?) AS ok', REPAIR_LOCK_KEY.toString());
    if (!bool(held?.ok)) return [];
  }
  const out: RepairedEvent[] = [];
  for (const n of yield* silentNodes()) {
    const events = yield* repairPlaced(n.id, Infinity);
    if (events.length) yield* run('UPDATE nodes SET boot_repaired = ? WHERE id = ?', true, n.id);
    out.push(...events);
    yield* replaceFrom(n.id, n.zone);
  }
  return out;
});

/** Silent nodes: repairs their active sessions (claims released), moves the rest to an up node of the zone if any. */
function* repairSilentNodes(): Op<RepairedEvent[]> {
  if ((yield* silentNodes()).length === 0) return []; // no write lock taken when there is nothing to do
  return yield* sweep();
}

/** The sessions still `active` and placed on no node (of `ids`; all with null) go idle or end, with their events. */
const repairUnplaced = tx(function* (ids: string[] | null): Op<RepairedEvent[]> {
  const placed = 'id NOT IN (SELECT session_id FROM session_placements)';
  return yield* repairWhere('connections = 0', ids ? `id IN (${marks(ids.length)}) AND ${placed}` : placed, ...(ids ?? []));
});

/** Repairs those of `ids` still active on no node: what this data plane carried when its last process died. */
function* repairCarriedSessions(ids: string[]): Op<RepairedEvent[]> {
  if (ids.length === 0) return [];
  return yield* repairUnplaced(ids);
}

/**
 * On a database one process serves (SQLite, folder lock held, before serving): every session left `active`
 * on no node had connections in the process that died (kill -9, power loss); each is repaired, keeping its
 * last saved duration and counters. Sessions placed on a node stay the node's (`node run` carries them).
 */
const repairAbandonedSessions = () => repairUnplaced(null);

/** Detaches a node: repairs its active sessions, moves the rest to an up node of its zone; all instances hear at once. */
const removeNode = tx(function* (name: string): Op<NodeInfo | undefined> {
  const node = yield* nodeOps.getNodeByName(name);
  if (!node) return undefined;
  yield* repairPlaced(node.id, Infinity);
  yield* replaceFrom(node.id, node.zone);
  yield* run('DELETE FROM session_placements WHERE node_id = ?', node.id);
  yield* runNotifying({ channel: CHANNELS.nodes, expr: 'id' }, 'DELETE FROM nodes WHERE id = ?', node.id);
  return node;
});

export const repairOps = { nodeHello, repairRestartedNode, repairSilentNodes, repairCarriedSessions, repairAbandonedSessions, removeNode };
