// Both databases, migrated to the newest version, have the same tables, columns and indexes
// (what only one of them needs is listed here, with why), so one set of operations serves both.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../server/store/db.ts';
import { MIGRATIONS } from '../../server/store/migrations/index.ts';
import { migrate } from '../../server/store/pg/schema.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

/** PostgreSQL only: the cluster-wide event id counter, token version and shared keys (SQLite keeps
 *  its keys in the data folder), its migration record, and the tokens' insertion order (SQLite's rowid). */
const PG_ONLY = ['cluster_keys', 'event_counter', 'schema_migrations', 'token_version', 'tokens.seq'];
/** SQLite only: AUTOINCREMENT's own table. */
const SQLITE_ONLY = ['sqlite_sequence'];

type Shape = { tables: string[]; columns: string[]; indexes: string[] };

function sqliteShape(dir: string): Shape {
  const db = openDatabase(dir);
  try {
    const version = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
    assert.equal(version, MIGRATIONS.length);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name).filter((n) => !SQLITE_ONLY.includes(n));
    const columns = tables.flatMap((t) => (db.prepare(`SELECT name FROM pragma_table_info('${t}')`).all() as { name: string }[]).map((c) => `${t}.${c.name}`));
    const indexes = (db.prepare("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all() as { name: string; tbl_name: string }[]).map((i) => {
      const cols = (db.prepare(`SELECT name FROM pragma_index_info('${i.name}') ORDER BY seqno`).all() as { name: string }[]).map((c) => c.name);
      return `${i.tbl_name}.${i.name}(${cols.join(',')})`;
    });
    return { tables: tables.sort(), columns: columns.sort(), indexes: indexes.sort() };
  } finally {
    db.close();
  }
}

async function pgShape(url: string): Promise<Shape> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {}); // an idle connection cut at shutdown is no finding of this test
  try {
    assert.equal(await migrate(pool), MIGRATIONS.length);
    const q = async (sql: string) => (await pool.query(sql)).rows as Record<string, string>[];
    const tables = (await q("SELECT table_name AS n FROM information_schema.tables WHERE table_schema = 'public'")).map((r) => r.n);
    const columns = (await q("SELECT table_name || '.' || column_name AS n FROM information_schema.columns WHERE table_schema = 'public'")).map((r) => r.n);
    // Indexes made by CREATE INDEX (not those behind a primary key or UNIQUE constraint).
    const indexes = (
      await q(`SELECT t.relname AS tbl, i.relname AS name,
          (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum) AS cols
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`)
    ).map((r) => `${r.tbl}.${r.name}(${r.cols})`);
    const keep = (n: string) => !PG_ONLY.includes(n) && !PG_ONLY.includes(n.split('.')[0]);
    return { tables: tables.filter(keep).sort(), columns: columns.filter(keep).sort(), indexes: indexes.sort() };
  } finally {
    await pool.end();
  }
}

test('SQLite and PostgreSQL have the same tables, columns and indexes at the newest version', async (t) => {
  const server = await startPostgres(t);
  const dir = tempDir('vad-schema-');
  t.after(() => removeDir(dir));
  const lite = sqliteShape(join(dir, 'data'));
  // What is compared is the schema; a connection cut by the machine (seen under heavy parallel
  // load) is not a finding, so the PostgreSQL side is read again once on a fresh database.
  const pgs = await pgShape(await server.createDatabase('parity')).catch(async (err: Error) => {
    if (!/terminating connection|Connection terminated/i.test(err.message)) throw err;
    t.diagnostic(`read again after: ${err.message}`);
    return pgShape(await server.createDatabase('parity_again'));
  });
  assert.deepEqual(pgs.tables, lite.tables, 'tables');
  assert.deepEqual(pgs.columns, lite.columns, 'columns');
  assert.deepEqual(pgs.indexes, lite.indexes, 'indexes');
  assert.ok(lite.tables.length >= 16, `${lite.tables.length} tables compared`);
});
