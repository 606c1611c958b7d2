// One server per data folder (two would overwrite each other's counters), by SQLite's file lock on
// `serve-lock.db` (fcntl on Unix, LockFileEx on Windows). The kernel holds it for the process, so it goes
// however the process ends: a restart after kill -9 (zombie still there) or a reboot is never refused,
// and no pid is judged alive or dead. The file names the holder (pid, host, start) for the refusal only.
// Never delete it (two starters could lock two different files). In the holding process open it only
// through SQLite: closing any other descriptor of it drops the process's fcntl locks.
import { unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

export const LOCK_FILE = 'serve-lock.db';
/** An older pid file; it locks nothing and is removed once the lock is taken. */
const LEGACY_LOCK_FILE = 'serve.lock';

/** Folders this process holds (a second server in the same process is refused too). */
const held = new Set<string>();

export class DataDirLocked extends Error {
  readonly code = 'EDATALOCKED';
}

interface Holder { pid: number; host: string; since: string }

const busy = (err: unknown) => /SQLITE_BUSY|database is locked/i.test(String((err as { errstr?: string }).errstr ?? (err as Error).message));

function readHolder(db: DatabaseSync): Holder | undefined {
  try {
    return db.prepare('SELECT pid, host, since FROM holder WHERE id = 1').get() as Holder | undefined;
  } catch {
    return undefined; // being written this very moment, or not written yet
  }
}

function refusal(dataDir: string, who: Holder | undefined): DataDirLocked {
  const by = !who ? 'another process' : `another vpn-access server (pid ${who.pid}${who.host !== hostname() ? ` on ${who.host}` : ''}, since ${who.since})`;
  return new DataDirLocked(`the data folder ${dataDir} is in use by ${by}; stop it first, or choose another folder with --data-dir`);
}

/** Returns the release function; throws DataDirLocked while another process (or this one) holds the folder. */
export function lockDataDir(dataDir: string): () => void {
  if (held.has(dataDir)) throw refusal(dataDir, { pid: process.pid, host: hostname(), since: 'earlier in this process' });
  const db = new DatabaseSync(join(dataDir, LOCK_FILE), { timeout: 0 });
  try {
    db.exec('CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL, since TEXT NOT NULL)');
    // RESERVED: no other connection can start a write while it is open, but can read the holder.
    // Record the holder, then hold; a starter slipping in between wins, and this one is refused below.
    db.exec('BEGIN IMMEDIATE');
    db.prepare('INSERT OR REPLACE INTO holder (id, pid, host, since) VALUES (1, ?, ?, ?)').run(process.pid, hostname(), new Date().toISOString());
    db.exec('COMMIT');
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    const who = busy(err) ? readHolder(db) : undefined;
    db.close();
    throw busy(err) ? refusal(dataDir, who) : err;
  }
  held.add(dataDir);
  try {
    unlinkSync(join(dataDir, LEGACY_LOCK_FILE));
  } catch {
    // none
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held.delete(dataDir);
    db.close(); // the transaction is rolled back (it wrote nothing) and the lock released
  };
}
