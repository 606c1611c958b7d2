// Before serving: lock the data folder (folder-lock.ts), then close the sessions a dead process (kill -9,
// power loss) left `active`, as the data plane would have (store.repairAbandonedSessions).
import type { Logger } from '../domain.ts';
import { lockDataDir } from './folder-lock.ts';
import type { Store } from './store.ts';

/** Locks the folder of an open store (closing the store when it cannot) and repairs it. */
export function takeDataDir(dataDir: string, store: Store, log: Logger): () => void {
  let release: (() => void) | undefined;
  try {
    release = lockDataDir(dataDir);
    // No stream is open yet: the events are stored, for streams that replay them.
    const repaired = store.repairAbandonedSessions();
    if (repaired.length > 0) log.warn({ sessions: repaired.length / 2 }, 'closed sessions left active by a server that stopped without closing them');
    return release;
  } catch (err) {
    release?.();
    store.db.close();
    throw err;
  }
}
