// Event retention (server/http/retention.ts): old events go in short batches, so a large backlog never
// stalls the relays sharing the thread.
import { run } from '../sql/op.ts';

/** Deletes every event older than the cutoff (ISO time); returns how many. */
const pruneEvents = (olderThanIso: string) => run('DELETE FROM events WHERE created_at < ?', olderThanIso);

/** Deletes at most `limit` of the oldest events before the cutoff; returns how many. Ordered as
 *  events_by_time, so a batch walks the index and stops after `limit` rows (ORDER BY id would sort
 *  every old event for each batch). */
const pruneEventsBatch = (olderThanIso: string, limit: number) =>
  run('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < ? ORDER BY created_at, id LIMIT ?)', olderThanIso, limit);

export const retentionOps = { pruneEvents, pruneEventsBatch };
