// Opens the SQLite database (node:sqlite, no native addon) and applies pending migrations/index.ts.
import { DatabaseSync } from 'node:sqlite';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { migrationSql, pendingVersions } from './migrations/index.ts';

export const DB_FILE = 'vpn-access.db';

/**
 * The folder holds session ids (VLESS secrets) and token hashes: 0700 for it, 0600 for the database
 * files, reapplied on every open. The file is made 0600 before SQLite opens it; -wal/-shm get its mode.
 */
function secureDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const file = join(dataDir, DB_FILE);
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    if (existsSync(f)) chmodSync(f, 0o600);
  }
}

/** `upTo`: the schema version to stop at (the latest unless an upgrade test builds an older database). */
export function openDatabase(dataDir: string, upTo?: number): DatabaseSync {
  secureDataDir(dataDir);
  const db = new DatabaseSync(join(dataDir, DB_FILE));
  // WAL + synchronous=NORMAL: a committed transaction survives the death of the process
  // (kill -9); only a power loss may drop the last few. FULL would also cover power loss.
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('PRAGMA foreign_keys = ON');
  db.exec('PRAGMA busy_timeout = 5000');
  const { user_version } = db.prepare('PRAGMA user_version').get() as { user_version: number };
  for (const v of pendingVersions(user_version, upTo)) {
    transaction(db, () => {
      db.exec(migrationSql(v, 'sqlite'));
      db.exec(`PRAGMA user_version = ${v}`);
    });
  }
  return db;
}

/** Runs `fn` in one write transaction (BEGIN IMMEDIATE: one writer at a time, across processes too). */
export function transaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const out = fn();
    db.exec('COMMIT');
    return out;
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
}
