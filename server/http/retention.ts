// Event retention: events older than the retention period are deleted at start and then
// every hour. Returns the function that stops the hourly timer.
/** The SQLite Store (synchronous) or the PostgreSQL store (a failed prune is retried next hour). */
type Prunable = { pruneEvents(olderThanIso: string): number | Promise<number> };

const PRUNE_INTERVAL_MS = 3_600_000;

export function startEventRetention(store: Prunable, retentionMs: number): () => void {
  const prune = () => {
    const done = store.pruneEvents(new Date(Date.now() - retentionMs).toISOString());
    if (done instanceof Promise) done.catch(() => {});
  };
  prune();
  const timer = setInterval(prune, PRUNE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
