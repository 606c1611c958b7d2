// Event retention: events older than the retention period are deleted at start and then
// every hour. Returns the function that stops the hourly timer.
import type { Store } from '../store/store.ts';

const PRUNE_INTERVAL_MS = 3_600_000;

export function startEventRetention(store: Store, retentionMs: number): () => void {
  const prune = () => store.pruneEvents(new Date(Date.now() - retentionMs).toISOString());
  prune();
  const timer = setInterval(prune, PRUNE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
