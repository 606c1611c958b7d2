// SQLite's cache of getCached reads (store/sql/read-cache.ts): a read answered from it never
// shows a row older than the database's: writes by this process, raw statements and commits of
// another connection all drop it; reads inside a transaction bypass it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from '../../server/store/db.ts';
import { readTables, writtenTables } from '../../server/store/sql/read-cache.ts';
import { Store } from '../../server/store/store.ts';
import { removeDir, tempDir, withStore } from '../helpers/server.ts';

test('cached reads of limits, clients and sessions follow every write', () => {
  withStore((store) => {
    const { info } = store.createToken('acme', 'owner');
    const c = info.customer_id;
    assert.equal(store.getLimits(c, 'global'), undefined);
    store.patchLimits(c, 'global', { max_sessions: 3 });
    assert.equal(store.getLimits(c, 'global')?.max_sessions, 3);
    // A hit hands out a copy: changing it changes nothing cached.
    const got = store.getLimits(c, 'global')!;
    got.max_sessions = 99;
    assert.equal(store.getLimits(c, 'global')?.max_sessions, 3);
    store.patchLimits(c, 'global', { max_sessions: 4 });
    assert.equal(store.getLimits(c, 'global')?.max_sessions, 4);
    store.deleteLimits(c, 'global');
    assert.equal(store.getLimits(c, 'global'), undefined);

    assert.equal(store.getClient(c, 'k'), undefined);
    store.patchClient(c, 'k', { disabled: true });
    assert.equal(store.getClient(c, 'k')?.disabled, true);
    // A raw statement outside operations (the runner's all()) drops the cache too.
    store.runner.all('UPDATE clients SET disabled = 0 WHERE customer_id = ?', c);
    assert.equal(store.getClient(c, 'k')?.disabled, false);

    const row = store.insertSession({ id: 'f0e1d2c3-0000-4000-8000-0000000000c1', customer_id: c, client_id: 'k', zone: 'de-fra', reusable: true, created_at: new Date().toISOString() });
    assert.equal(store.getSessionOf(c, row.id)?.paused, false);
    store.setPaused(row.id, true);
    assert.equal(store.getSessionOf(c, row.id)?.paused, true);
    store.saveRuntime(row.id, { status: 'active', uploaded_bytes: 7, downloaded_bytes: 8, duration: 1, connections: 1 });
    assert.equal(store.getSessionOf(c, row.id)?.uploaded_bytes, 7);
    assert.equal(store.getSessionOf('another', row.id), undefined);
  });
});

test('a commit by another connection (another process) is seen by the cached reads of the next turn', async () => {
  const dir = tempDir('vad-read-cache-');
  const store = new Store(openDatabase(dir));
  try {
    const { info } = store.createToken('acme', 'owner');
    const c = info.customer_id;
    store.patchLimits(c, 'session', { max_sessions: 2 });
    assert.equal(store.getLimits(c, 'session')?.max_sessions, 2);
    const other = new Store(openDatabase(dir));
    try {
      other.patchLimits(c, 'session', { max_sessions: 5 });
      // data_version is read once per turn of the event loop: a request arriving after the
      // commit is handled in a later turn.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(store.getLimits(c, 'session')?.max_sessions, 5);
      other.patchLimits(c, 'session', { max_sessions: 6 });
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(store.getLimits(c, 'session')?.max_sessions, 6);
    } finally {
      other.db.close();
    }
  } finally {
    store.db.close();
    removeDir(dir);
  }
});

test('reads inside a transaction see its own uncommitted writes, and a rollback leaves nothing cached', () => {
  withStore((store) => {
    const { info } = store.createToken('acme', 'owner');
    const c = info.customer_id;
    assert.throws(() =>
      store.transaction(() => {
        store.patchLimits(c, 'client', { max_sessions: 1 });
        assert.equal(store.getLimits(c, 'client')?.max_sessions, 1);
        throw new Error('undo');
      }),
    );
    assert.equal(store.getLimits(c, 'client'), undefined);
  });
});

test('the tables a statement writes, as the caches drop them', () => {
  assert.deepEqual(writtenTables('SELECT fields FROM limits WHERE customer_id = ?'), []);
  assert.deepEqual(writtenTables('UPDATE sessions SET paused = ? WHERE id = ?'), ['sessions']);
  assert.deepEqual(writtenTables('INSERT OR IGNORE INTO clients (customer_id) VALUES (?)'), ['clients']);
  // A session creation on PostgreSQL: data-modifying WITH parts, each target named.
  const create = 'WITH s AS (INSERT INTO sessions (id) VALUES (?) RETURNING id), p AS (INSERT INTO session_placements (session_id) SELECT id FROM s), a AS (INSERT INTO audit_log (x) VALUES (?)) SELECT id FROM s';
  assert.deepEqual(writtenTables(create), ['sessions', 'session_placements', 'audit_log']);
  assert.deepEqual(writtenTables('WITH d AS (DELETE FROM limits WHERE scope = ? RETURNING 1) SELECT COUNT(*) FROM d'), ['limits']);
  assert.deepEqual(writtenTables('WITH x AS (SELECT 1) SELECT * FROM x'), [], 'a WITH that writes nothing');
  assert.deepEqual(writtenTables('CREATE TABLE t (a INTEGER)'), ['*'], 'anything else: every table');
  assert.deepEqual(readTables(`SELECT a FROM sessions s LEFT JOIN clients c ON c.id = s.id, (SELECT fields FROM limits) AS l FROM limits`), ['sessions', 'clients', 'limits']);
});
