// The subscriptions repository on both databases: turned on, rotated (a new nonce and secret
// hash, the old hash no longer found), read, turned off; the client's usable sessions (not ended,
// not paused, newest first, at most the limit); and the cluster's shared keys (made once, then
// read; on SQLite these keys are files of the data folder, so the table is made here only to
// prove the one SQL text); and SQLite's operations behind settled promises.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { openDatabase } from '../../server/store/db.ts';
import { clusterKeyOps } from '../../server/store/repos/cluster-keys.ts';
import { subscriptionOps as ops } from '../../server/store/repos/subscriptions.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { bindSettled, bindSync, SqliteRunner } from '../../server/store/sql/sqlite-runner.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const T0 = '2026-11-25T10:00:00.000Z';

async function session(db: DialectDb, customerId: string, id: string, clientId: string, status: string, paused = false): Promise<void> {
  await db.sql(
    `INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, paused, status, uploaded_bytes, downloaded_bytes, duration, connections, created_at)
     VALUES (?, ?, ?, 'eu', 'vless', ?, ?, ?, 5, 7, 11, 2, ?)`,
    id, customerId, clientId, true, paused, status, T0,
  );
}

eachDialect('subscriptions: on, rotated, found by secret hash, off', async (db) => {
  const c = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  assert.equal(await db.run(ops.get(c, 'phone')), undefined);
  const on = await db.run(ops.upsert(c, 'phone', 'n1', 'h1'));
  assert.deepEqual({ ...on, created_at: 'x' }, { customer_id: c, client_id: 'phone', nonce: 'n1', secret_hash: 'h1', created_at: 'x', rotated_at: null });
  assert.deepEqual({ ...(await db.run(ops.get(c, 'phone'))) }, { ...on });
  assert.deepEqual({ ...(await db.run(ops.findBySecretHash('h1'))) }, { ...on });

  const rotated = await db.run(ops.upsert(c, 'phone', 'n2', 'h2'));
  assert.deepEqual([rotated.nonce, rotated.secret_hash, rotated.created_at], ['n2', 'h2', on.created_at]);
  assert.match(rotated.rotated_at ?? '', /^\d{4}-\d\d-\d\dT/);
  assert.equal(await db.run(ops.findBySecretHash('h1')), undefined, 'the old URL no longer works');
  assert.equal((await db.run(ops.findBySecretHash('h2')))?.client_id, 'phone');

  assert.equal(await db.run(ops.delete(c, 'phone')), true);
  assert.equal(await db.run(ops.delete(c, 'phone')), false);
  assert.equal(await db.run(ops.get(c, 'phone')), undefined);
});

eachDialect('subscriptions: the usable sessions of a client', async (db) => {
  const c = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  await session(db, c, 's1', 'phone', 'created');
  await session(db, c, 's2', 'phone', 'ended');
  await session(db, c, 's3', 'phone', 'active', true);
  await session(db, c, 's4', 'laptop', 'active');
  await session(db, c, 's5', 'phone', 'active');
  const rows = await db.run(ops.usableSessions(c, 'phone'));
  assert.deepEqual(rows.map((r) => r.id), ['s5', 's1'], 'not ended, not paused, newest first');
  assert.deepEqual({ ...rows[0] }, {
    id: 's5', customer_id: c, client_id: 'phone', zone: 'eu', reusable: true, paused: false, status: 'active',
    uploaded_bytes: 5, downloaded_bytes: 7, duration: 11, connections: 2, created_at: T0, expires_at: null,
  });
  assert.deepEqual((await db.run(ops.usableSessions(c, 'phone', 1))).map((r) => r.id), ['s5']);
});

eachDialect('cluster keys: made once by the first to ask, then read', async (db) => {
  if (db.dialect === 'sqlite') await db.sql('CREATE TABLE cluster_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL)');
  const first = await db.run(clusterKeyOps.clusterKey('subscriptions', 32));
  assert.equal(first.length, 32);
  assert.deepEqual(await db.run(clusterKeyOps.clusterKey('subscriptions', 32)), first);
  assert.notDeepEqual(await db.run(clusterKeyOps.clusterKey('webhooks', 32)), first);
  await assert.rejects(db.run(clusterKeyOps.clusterKey('webhooks', 16)), /the cluster's webhooks key is not 16 bytes/);
});

test('bindSettled: operations run synchronously on SQLite behind promises; a failure is a rejection, not a throw', async (t) => {
  const dir = tempDir('vad-settled-');
  t.after(() => removeDir(dir));
  const db = openDatabase(join(dir, 'data'));
  const runner = new SqliteRunner(db);
  const subs = bindSettled(ops, runner);
  const c = bindSync(tokenOps, runner).ensureCustomer('acme').id;
  assert.equal((await subs.upsert(c, 'phone', 'n1', 'h1')).nonce, 'n1');
  assert.equal((await subs.get(c, 'phone'))?.secret_hash, 'h1');
  db.close();
  let pending: Promise<unknown> | undefined;
  assert.doesNotThrow(() => (pending = subs.get(c, 'phone')));
  await assert.rejects(pending!, /finalized|not open/);
});
