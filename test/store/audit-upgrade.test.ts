// A database made before version 22 (a session's audit entries found by its random id) keeps
// every entry findable by session after the upgrade, on both databases: the entries written
// before it get their session's seq, and the new index serves the read.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { openDatabase } from '../../server/store/db.ts';
import { MIGRATIONS, pendingVersions } from '../../server/store/migrations/index.ts';
import { openPool } from '../../server/store/pg/pool.ts';
import { migrate } from '../../server/store/pg/schema.ts';
import { auditOps } from '../../server/store/repos/audit.ts';
import { PgRunner } from '../../server/store/sql/pg-runner.ts';
import { SqliteRunner } from '../../server/store/sql/sqlite-runner.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const BEFORE = 21;
const T = '2026-11-01T00:00:00.000Z';
/** Version 21's rows: a customer, two sessions, an entry of each and one of no session. */
const ROWS = [
  `INSERT INTO customers (id, name, created_at) VALUES ('acme', 'acme', '${T}')`,
  ...['s1', 's2'].map((id) => `INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, created_at) VALUES ('${id}', 'acme', 'alice', 'de-fra', 'vless', true, '${T}')`),
  ...[['s1', 'session.create'], ['s2', 'session.create'], ['s1', 'session.pause'], [null, 'limits.update']].map(([sid, action]) =>
    `INSERT INTO audit_log (customer_id, created_at, actor_token_id, actor_role, action, target_type, target_id, session_id, client_id, before_json, after_json)
     VALUES ('acme', '${T}', NULL, 'cli', '${action}', 'session', '${sid ?? 'global'}', ${sid ? `'${sid}'` : 'NULL'}, NULL, NULL, NULL)`),
];

test('pendingVersions: up to the target given (never past the latest), none when the database is there already, newer refused', () => {
  const latest = MIGRATIONS.length;
  assert.deepEqual(pendingVersions(19, 21), [20, 21]);
  assert.deepEqual(pendingVersions(latest - 1), [latest]);
  assert.deepEqual(pendingVersions(latest - 1, latest + 5), [latest]);
  assert.deepEqual(pendingVersions(21, 21), []);
  assert.deepEqual(pendingVersions(22, 21), []);
  assert.throws(() => pendingVersions(latest + 1), /newer than this program/);
});

test('audit upgrade to version 22 on SQLite: entries written before it are found by session', () => {
  assert.equal(MIGRATIONS.length >= 22, true);
  const dir = tempDir('vad-audit-upgrade-');
  try {
    const data = join(dir, 'data');
    const old = openDatabase(data, BEFORE);
    assert.equal((old.prepare('PRAGMA user_version').get() as { user_version: number }).user_version, BEFORE);
    for (const sql of ROWS) old.exec(sql);
    old.close();
    const db = openDatabase(data);
    try {
      const runner = new SqliteRunner(db);
      const of = (sessionId: string) => runner.run(auditOps.auditEntries('acme', { session_id: sessionId }, 10)).rows.map((r) => r.action);
      assert.deepEqual(of('s1'), ['session.pause', 'session.create']);
      assert.deepEqual(of('s2'), ['session.create']);
      assert.equal(runner.run(auditOps.auditEntries('acme', {}, 10)).rows.length, 4);
      const plan = (db.prepare("EXPLAIN QUERY PLAN SELECT id FROM audit_log WHERE customer_id = 'acme' AND session_seq = (SELECT seq FROM sessions WHERE id = 's1') ORDER BY id DESC").all() as { detail: string }[]).map((r) => r.detail).join(' | ');
      assert.match(plan, /audit_by_session_seq/, plan);
    } finally {
      db.close();
    }
  } finally {
    removeDir(dir);
  }
});

test('audit upgrade to version 22 on PostgreSQL: entries written before it are found by session', async (t) => {
  const server = await startPostgres(t);
  const url = await server.createDatabase('audit_upgrade');
  const pool = openPool(url, { max: 2 });
  try {
    assert.equal(await migrate(pool, BEFORE), BEFORE);
    for (const sql of ROWS) await pool.query(sql);
    assert.equal(await migrate(pool), MIGRATIONS.length);
    const runner = new PgRunner(pool);
    const of = async (sessionId: string) => (await runner.run(auditOps.auditEntries('acme', { session_id: sessionId }, 10))).rows.map((r) => r.action);
    assert.deepEqual(await of('s1'), ['session.pause', 'session.create']);
    assert.deepEqual(await of('s2'), ['session.create']);
  } finally {
    await pool.end();
  }
});
