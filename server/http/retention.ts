// Event retention: events older than the retention period are deleted at start and then
// every hour, in batches (PRUNE_BATCH rows per statement, yielding to the event loop between
// batches) so that a large prune never stalls the relays sharing this thread. Returns the
// function that stops the hourly timer and any prune under way.
/** The SQLite Store (synchronous) or the PostgreSQL store (a failed prune is retried next hour). */
type Prunable = { pruneEventsBatch(olderThanIso: string, limit: number): number | Promise<number> };

const PRUNE_INTERVAL_MS = 3_600_000;
/** Rows deleted per statement: a few milliseconds of SQLite work each. A deleted event costs
 *  about 12 µs on a busy 2-core machine with the event table's four indexes (bench/scale.ts,
 *  "retention prune": 535k events in 6.3 s), so 5000 rows held the thread for 60-390 ms. */
export const PRUNE_BATCH = 1000;

export function startEventRetention(store: Prunable, retentionMs: number, batch = PRUNE_BATCH): () => void {
  let stopped = false;
  let running = false;
  const prune = async () => {
    if (running) return; // the previous prune is still going: the next hour catches up
    running = true;
    try {
      const cutoff = new Date(Date.now() - retentionMs).toISOString();
      while (!stopped && (await store.pruneEventsBatch(cutoff, batch)) === batch) {
        await new Promise<void>((r) => setImmediate(r));
      }
    } catch {
      // the store closed under a prune (shutdown), or the database is away: the next hour retries
    } finally {
      running = false;
    }
  };
  void prune();
  const timer = setInterval(() => void prune(), PRUNE_INTERVAL_MS);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
