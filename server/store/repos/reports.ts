// Reports of the data planes, applied exactly once: a node's (`node run`, numbered per node) and an
// instance's own counter journal (cluster/journal.ts, numbered per journal). In one transaction its
// byte counts are ADDED to the sessions' counters (several data planes may carry one session), its
// events stored and its number kept: a report resent (lost ack, crash) counts once, and none is lost.
import type { EventInsert, SessionRow } from '../../domain.ts';
import type { SessionEvent } from '../../contract/schemas.ts';
import { get, run, tx, type Op } from '../sql/op.ts';
import { insertEvents } from './events.ts';

/** What one report adds to one session. */
export type NodeReportAdd = Pick<SessionRow, 'id' | 'uploaded_bytes' | 'downloaded_bytes'> & Partial<Pick<SessionRow, 'status' | 'duration' | 'connections'>>;

const ADD = `UPDATE sessions SET uploaded_bytes = uploaded_bytes + ?, downloaded_bytes = downloaded_bytes + ?,
    status = COALESCE(?, status), duration = COALESCE(?, duration), connections = COALESCE(?, connections)
  WHERE id = ?`;
/** A node's report counts only for the sessions placed on it, or moved away from it. */
const ADD_PLACED = `${ADD} AND id IN (SELECT session_id FROM session_placements WHERE node_id = ? OR moved_from = ?)`;

/** What a node used of its grants (server/store/grants.ts): client and customer (client_id '') rows at once. */
const ADD_USED = `INSERT INTO node_grants (node_id, customer_id, client_id, used_up, used_down)
    SELECT ?, s.customer_id, CASE WHEN k.whole = 1 THEN '' ELSE s.client_id END, ?, ?
    FROM sessions s CROSS JOIN (SELECT 0 AS whole UNION ALL SELECT 1) k WHERE s.id = ?
  ON CONFLICT (customer_id, client_id, node_id) DO UPDATE SET
    used_up = node_grants.used_up + excluded.used_up, used_down = node_grants.used_down + excluded.used_down`;

/** The journal's last applied seq moved to `seq`: a row only when `seq` is newer. */
const JOURNAL_SEQ = `INSERT INTO journal_seqs (journal_id, seq) VALUES (?, ?)
    ON CONFLICT (journal_id) DO UPDATE SET seq = excluded.seq WHERE journal_seqs.seq < excluded.seq
  RETURNING journal_id`;

/** Adds one session's counters; a node's report (nodeId set) only to sessions placed on it or moved from it. */
function* addReported(a: NodeReportAdd, nodeId: string | null): Op<void> {
  const fields = [a.uploaded_bytes, a.downloaded_bytes, a.status ?? null, a.duration ?? null, a.connections ?? null, a.id];
  if (nodeId === null) yield* run(ADD, ...fields);
  else yield* run(ADD_PLACED, ...fields, nodeId, nodeId);
}

/**
 * Applies a node's report at most once (see the header), with what it used of the node's grants.
 * Returns the stored events (to wake the readers), or false when the seq was already applied.
 */
const applyNodeReport = tx(function* (nodeId: string, seq: number, adds: NodeReportAdd[], events: EventInsert[] = []): Op<SessionEvent[] | false> {
  if ((yield* run('UPDATE nodes SET report_seq = ? WHERE id = ? AND report_seq < ?', seq, nodeId, seq)) === 0) return false;
  for (const a of adds) {
    yield* addReported(a, nodeId);
    if (a.uploaded_bytes > 0 || a.downloaded_bytes > 0) yield* run(ADD_USED, nodeId, a.uploaded_bytes, a.downloaded_bytes, a.id);
  }
  return yield* insertEvents(events);
});

/** Applies an instance's counter-journal report at most once, as applyNodeReport (false: already applied). */
const applyJournalReport = tx(function* (journalId: string, seq: number, adds: NodeReportAdd[], events: EventInsert[] = []): Op<SessionEvent[] | false> {
  if (!(yield* get(JOURNAL_SEQ, journalId, seq))) return false;
  for (const a of adds) yield* addReported(a, null);
  return yield* insertEvents(events);
});

export const reportOps = { applyNodeReport, applyJournalReport };
