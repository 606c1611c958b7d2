// What a server does to its data folder before it serves: take the folder's lock (two servers
// on one folder would overwrite each other's counters; server/store/folder-lock.ts), and
// repair what a process that died (kill -9, power loss) left behind: sessions still `active`,
// closed as the data plane would have closed them.
import type { EventInput, Logger } from '../domain.ts';
import { lockDataDir } from './folder-lock.ts';
import type { Store } from './store.ts';

/**
 * Sessions left `active` by a process that died with connections open: closed as the data
 * plane closes a session whose last connection ends (reusable → idle, one-shot → ended; the
 * last saved duration and counters are kept), with its session_stats and session_end events.
 * Only called with the folder's lock held, so no live process owns these sessions. Sessions
 * placed on a data-plane node are the node's (`node run` keeps carrying them): left as they are.
 */
export function repairAfterCrash(store: Store, publish: (e: EventInput) => void, log: Logger): number {
  const left = store.db.prepare(
    `SELECT id, customer_id, reusable, uploaded_bytes, downloaded_bytes, duration FROM sessions WHERE status = 'active'
       AND id NOT IN (SELECT session_id FROM session_placements)`,
  ).all() as { id: string; customer_id: string; reusable: number; uploaded_bytes: number; downloaded_bytes: number; duration: number }[];
  for (const s of left) {
    store.saveRuntime(s.id, { status: s.reusable ? 'idle' : 'ended' });
    for (const type of ['session_stats', 'session_end'] as const) {
      publish({ customerId: s.customer_id, sessionId: s.id, type, duration: s.duration, uploaded_bytes: s.uploaded_bytes, downloaded_bytes: s.downloaded_bytes });
    }
  }
  if (left.length > 0) log.warn({ sessions: left.length }, 'closed sessions left active by a server that stopped without closing them');
  return left.length;
}

/** Locks the folder of an open store (closing the store when it cannot) and repairs it. */
export function takeDataDir(dataDir: string, store: Store, publish: (e: EventInput) => void, log: Logger): () => void {
  let release: () => void;
  try {
    release = lockDataDir(dataDir);
  } catch (err) {
    store.db.close();
    throw err;
  }
  try {
    repairAfterCrash(store, publish, log);
  } catch (err) {
    release();
    store.db.close();
    throw err;
  }
  return release;
}
