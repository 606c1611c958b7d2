// Event retention (server/http/retention.ts): events older than the retention period are
// deleted, in short batches so a large backlog never stalls the relays sharing the thread.
import { run } from '../sql/op.ts';

/** Deletes every event older than the cutoff (ISO time); returns how many. */
const pruneEvents = (olderThanIso: string) => run('DELETE FROM events WHERE created_at < ?', olderThanIso);

/** Deletes at most `limit` of the oldest events older than the cutoff; returns how many. One
 *  short statement, so a caller can prune a large backlog in steps. Oldest by created_at (then
 *  id), the order of events_by_time: a batch walks the index and stops after `limit` rows,
 *  where ORDER BY id sorted every event older than the cutoff for each batch. */
const pruneEventsBatch = (olderThanIso: string, limit: number) =>
  run('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < ? ORDER BY created_at, id LIMIT ?)', olderThanIso, limit);

export const retentionOps = { pruneEvents, pruneEventsBatch };
