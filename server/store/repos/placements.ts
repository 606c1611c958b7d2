// Where each session is placed: the catalogue node carrying it (none: the control plane's own
// data plane), and the node it was moved away from by crash repair (its late reports still count).
import type { SessionRow } from '../../domain.ts';
import { insertSessionValues, SESSION_COLUMNS, SESSION_COLUMNS_S, sessionOps, toSessionRow, type NewSession, type RawSession } from './sessions.ts';
import { isoNow } from '../../time.ts';
import { all, allAs, dialect, getAs, marks, run, tx, type Op, type Param } from '../sql/op.ts';
import { nodeColumns, toNode, type NodeInfo, type RawNode } from './nodes.ts';
import { AUDIT_COLUMNS, AUDIT_INTO, auditOps, insertAuditValues, type AuditInsert } from './audit.ts';

/** One creation: the session, its node (none: local), its audit record (none: not audited). */
export type Creation = [s: NewSession, nodeId: string | null, audit: AuditInsert | null];

const texts = (n: number) => Array.from({ length: n }, () => '?::text[]').join(', ');
/** Any number of creations in ONE PostgreSQL statement: each column a list, read back by unnest(). */
const CREATE_SESSIONS = `WITH s AS (
    INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, created_at, expires_at)
    SELECT id, customer_id, client_id, zone, 'vless', reusable, created_at, expires_at
    FROM unnest(${texts(4)}, ?::boolean[], ${texts(2)}) AS v(id, customer_id, client_id, zone, reusable, created_at, expires_at)
    RETURNING ${SESSION_COLUMNS}),
  p AS (INSERT INTO session_placements (session_id, node_id, placed_at) SELECT * FROM unnest(${texts(3)})),
  a AS (${AUDIT_INTO} SELECT v.*, s.seq FROM unnest(${texts(11)}) AS v(${AUDIT_COLUMNS}) LEFT JOIN s ON s.id = v.session_id)
  SELECT ${SESSION_COLUMNS} FROM s`;

/** Rows of `width` values as `width` column lists. */
const columns = (rows: Param[][], width: number): Param[][] => Array.from({ length: width }, (_, i) => rows.map((r) => r[i]));

/**
 * New sessions, each with its placement on a node (none: the local data plane) and its audit record
 * (none: not audited), all or nothing in one commit, rows in the order asked: on PostgreSQL one
 * statement (one round trip) whatever their number; on SQLite, which has no round trips, one
 * transaction. Creations asked for together are grouped by store/group-commit.ts.
 */
function* createSessions(list: Creation[]): Op<SessionRow[]> {
  if ((yield* dialect()) === 'sqlite') return yield* createSessionsTx(list);
  const now = isoNow();
  const placed = list.flatMap(([s, nodeId]) => (nodeId === null ? [] : [[s.id, nodeId, now]]));
  const audited = list.flatMap(([, , a]) => (a ? [insertAuditValues(a)] : []));
  const params = [...columns(list.map(([s]) => insertSessionValues(s)), 7), ...columns(placed, 3), ...columns(audited, 11)];
  const rows = new Map((yield* all<RawSession>(CREATE_SESSIONS, ...(params as Param[]))).map((r) => [r.id, toSessionRow(r)]));
  return list.map(([s]) => rows.get(s.id)!);
}

const createSessionsTx = tx(function* (list: Creation[]): Op<SessionRow[]> {
  const rows: SessionRow[] = [];
  for (const [s, nodeId, audit] of list) {
    const row = yield* sessionOps.insertSession(s);
    if (nodeId !== null) yield* placeSession(row.id, nodeId);
    if (audit) yield* auditOps.recordAudit(audit);
    rows.push(row);
  }
  return rows;
});

/** One creation (createSessions of one). */
function* createSession(...creation: Creation): Op<SessionRow> {
  return (yield* createSessions([creation]))[0];
}

/** Places a session on a node (again: it is no longer moved from anywhere). */
function* placeSession(sessionId: string, nodeId: string): Op<void> {
  yield* run(
    `INSERT INTO session_placements (session_id, node_id, placed_at) VALUES (?, ?, ?)
     ON CONFLICT (session_id) DO UPDATE SET node_id = excluded.node_id, placed_at = excluded.placed_at, moved_from = NULL`,
    sessionId,
    nodeId,
    isoNow(),
  );
}

/** The node carrying a session, if it is placed. */
const placementOf = (sessionId: string) =>
  getAs((r: { node_id: string }) => r.node_id, 'SELECT node_id FROM session_placements WHERE session_id = ?', sessionId);

/** The nodes of those of `sessionIds` that are placed on a catalogue node (sessions on `local` have none). */
function* placedNodes(sessionIds: string[]): Op<(NodeInfo & { session_id: string })[]> {
  if (sessionIds.length === 0) return [];
  return yield* allAs(
    ({ session_id, ...node }: RawNode & { session_id: string }) => ({ ...toNode(node), session_id }),
    `SELECT p.session_id, ${nodeColumns('n')}
     FROM session_placements p JOIN nodes n ON n.id = p.node_id WHERE p.session_id IN (${marks(sessionIds.length)})`,
    ...sessionIds,
  );
}

const placedBy = (column: 'node_id' | 'moved_from', nodeId: string) => allAs(
  toSessionRow,
  `SELECT ${SESSION_COLUMNS_S} FROM session_placements p JOIN sessions s ON s.id = p.session_id WHERE p.${column} = ? ORDER BY s.seq`,
  nodeId,
);

/** Sessions placed on a node (a node may act only on these), in creation order. */
const sessionsOnNode = (nodeId: string) => placedBy('node_id', nodeId);

/** Sessions moved away from a node (crash repair): its late reports still add their bytes. */
const sessionsMovedFrom = (nodeId: string) => placedBy('moved_from', nodeId);

/** The node (null: a serve data plane) of each active session of a customer (cluster speed shares). */
const activeSessionNodes = (customerId: string) => all<{ client_id: string; node_id: string | null }>(
  `SELECT s.client_id, p.node_id FROM sessions s LEFT JOIN session_placements p ON p.session_id = s.id
   WHERE s.customer_id = ? AND s.status = 'active' ORDER BY s.seq`,
  customerId,
);

export const placementOps = { createSession, createSessions, placeSession, placementOf, placedNodes, sessionsOnNode, sessionsMovedFrom, activeSessionNodes };
