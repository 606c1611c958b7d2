// The database as the doctor reads it: the CLI opens the data folder's SQLite file read-only or
// a small PostgreSQL pool (never migrating, never writing); the server hands its own store.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DB_FILE } from '../store/db.ts';
import { Store } from '../store/store.ts';
import { PROBE_TIMEOUT_MS } from './report.ts';
import type { DatabaseProbe } from './store.ts';

/** The data folder's database, opened read-only when it exists (the probe's close() releases it). */
export function sqliteProbe(dataDir: string): DatabaseProbe & { close(): Promise<void> } {
  const file = join(dataDir, DB_FILE);
  let db: DatabaseSync | undefined;
  const open = () => (db ??= new DatabaseSync(file, { readOnly: true, timeout: PROBE_TIMEOUT_MS }));
  return {
    kind: 'sqlite',
    where: file,
    schemaVersion: async () => (existsSync(file) ? (open().prepare('PRAGMA user_version').get() as { user_version: number }).user_version : null),
    nodes: async () => new Store(open()).listNodes(),
    relays: async () => new Store(open()).relayNodes(),
    close: async () => db?.close(),
  };
}

/** PostgreSQL at `url` on a pool of one connection, 2 s to connect and per query (the client loaded only here). */
export async function postgresProbe(url: string, shownAs: string): Promise<DatabaseProbe & { close(): Promise<void> }> {
  const { openPool } = await import('../store/pg/pool.ts');
  const { PgStore } = await import('../store/pg/store.ts');
  const pool = openPool(url, { max: 1, connectTimeoutMs: PROBE_TIMEOUT_MS, queryTimeoutMs: PROBE_TIMEOUT_MS, applicationName: 'vpn-access doctor' });
  const store = new PgStore(pool);
  return {
    kind: 'postgres',
    where: shownAs,
    schemaVersion: () => store.schemaVersion().catch(async (err: { code?: string }) => {
      // Before the first migration there is no version table: version 0, once the server answers.
      if (err?.code !== '42P01') throw err;
      return 0;
    }),
    nodes: () => store.listNodes(),
    relays: () => store.relayNodes(),
    clock: () => store.databaseClock(),
    close: () => pool.end(),
  };
}
