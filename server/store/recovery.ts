// What a server does to its data folder before it serves: take the folder's lock (two servers
// on one folder would overwrite each other's counters), and repair what a process that died
// (kill -9, power loss) left behind: sessions still `active`, closed as the data plane would
// have closed them.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { EventInput, Logger } from '../domain.ts';
import type { Store } from './store.ts';

export const LOCK_FILE = 'serve.lock';

/** Folders this process holds (a second server in the same process is refused too). */
const held = new Set<string>();

export class DataDirLocked extends Error {
  readonly code = 'EDATALOCKED';
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the exclusive lock of a data folder: a file created with O_EXCL holding the pid. A lock
 * whose pid is no longer running is stale (its server died) and is taken over. Returns the
 * release function; throws DataDirLocked while another live server holds the folder.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      held.add(dataDir);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held.delete(dataDir);
        try {
          if (Number(readFileSync(file, 'utf8').trim()) === process.pid) unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let pid = NaN;
    try {
      pid = Number(readFileSync(file, 'utf8').trim());
    } catch {
      continue; // removed meanwhile: try again
    }
    const ours = pid === process.pid;
    if (Number.isInteger(pid) && pid > 0 && ((ours && held.has(dataDir)) || (!ours && alive(pid)))) {
      throw new DataDirLocked(
        `the data folder ${dataDir} is in use by another vpn-access server (pid ${pid}); stop it first, or choose another folder with --data-dir`,
      );
    }
    // Stale: its process is gone (or the file is unreadable garbage).
    try {
      unlinkSync(file);
    } catch {
      // another starter removed it first
    }
  }
  throw new DataDirLocked(`could not take the lock ${file}`);
}

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
