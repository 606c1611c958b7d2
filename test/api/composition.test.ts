// One composition for both databases: every member of the services is there and readable on
// SQLite and on PostgreSQL (none throws); each server has its own change feed, so two servers
// built in one process never wake each other's node channels; and updating limits is one
// service call that stores, audits and wakes the node channels, with or without HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildServer } from '../../server/app.ts';
import type { Services } from '../../server/services.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { callApi } from '../helpers/http.ts';
import { makeServer, removeDir, tempDir } from '../helpers/server.ts';

/** Reads every member (getters included): the names of those that throw. */
function throwingMembers(services: Services): string[] {
  const names = new Set<string>();
  for (let o: object | null = services; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) for (const k of Object.getOwnPropertyNames(o)) names.add(k);
  const thrown: string[] = [];
  for (const k of names) {
    try {
      void (services as unknown as Record<string, unknown>)[k];
    } catch {
      thrown.push(k);
    }
  }
  return thrown;
}

test('on SQLite no member of the services throws, and the SQLite handles are there', async () => {
  const s = await makeServer();
  try {
    assert.deepEqual(throwingMembers(s.services), []);
    assert.equal(s.services.database, 'sqlite');
    assert.ok(s.services.sqlite?.store && s.services.sqlite.bus);
    assert.ok(s.services.webhooks && s.services.subscriptions && s.services.limits && s.services.pause);
  } finally {
    await s.close();
  }
});

test('on PostgreSQL no member of the services throws, and there are no SQLite handles', async (t) => {
  const pg = await startPostgres(t);
  const dataDir = tempDir('vad-compose-pg-');
  const { app, services } = await buildServer({ dataDir, database: pg.url(), dataPlane: null });
  try {
    assert.deepEqual(throwingMembers(services), []);
    assert.equal(services.database, 'postgres');
    assert.equal(services.sqlite, null);
    assert.ok(services.webhooks && services.subscriptions && services.limits && services.pause);
    // A token made through the seam works on this database too.
    const token = (await services.data.createToken('compose', 'owner')).token;
    assert.ok(await services.tokenLookup.find(token));
  } finally {
    await app.close();
    removeDir(dataDir);
  }
});

test('each server has its own change feed: a limits change on one never wakes the other', async () => {
  const a = await makeServer();
  const b = await makeServer();
  try {
    assert.notEqual(a.services.changes, b.services.changes);
    let heardA = 0;
    let heardB = 0;
    const offA = a.services.changes.on(() => heardA++);
    const offB = b.services.changes.on(() => heardB++);
    await a.app.listen({ port: 0, host: '127.0.0.1' });
    const address = a.app.server.address() as { port: number };
    const base = `http://127.0.0.1:${address.port}/v2`;
    const patched = await callApi(base, a.owner, 'PATCH', '/customer/limits/client', { max_sessions: 3 });
    assert.equal(patched.status, 200);
    assert.equal(heardA, 1, 'the server that stored the change wakes its channels');
    const deleted = await callApi(base, a.owner, 'DELETE', '/customer/limits/client');
    assert.equal(deleted.status, 204);
    assert.equal(heardA, 2);
    assert.equal(heardB, 0, 'the other server in the same process hears nothing');
    offA();
    offB();
    assert.equal(a.services.changes.size, 0);
  } finally {
    await a.close();
    await b.close();
  }
});

test('updating limits is one service call: stored, audited, node channels woken', async () => {
  const s = await makeServer();
  try {
    const info = await s.services.tokenLookup.find(s.owner);
    assert.ok(info);
    let heard = 0;
    s.services.changes.on(() => heard++);
    const actor = { tokenId: info.id, role: 'owner' as const };
    const saved = await s.services.limits.update(info.customer_id, actor, 'global', { max_sessions: 7 });
    assert.equal(saved.max_sessions, 7);
    assert.equal((await s.services.limits.get(info.customer_id, 'global')).max_sessions, 7);
    assert.equal(heard, 1);
    const audit = await s.services.data.auditEntries(info.customer_id, {}, 10);
    assert.deepEqual(audit.rows.map((r) => r.action), ['limits.update']);
    await s.services.limits.remove(info.customer_id, actor, 'global');
    await assert.rejects(s.services.limits.get(info.customer_id, 'global'), { code: 'limits_not_found' });
    await assert.rejects(s.services.limits.remove(info.customer_id, actor, 'global'), { code: 'limits_not_found' });
    assert.equal(heard, 2);
  } finally {
    await s.close();
  }
});

test('PostgreSQL, two instances: a limits change wakes each instance\'s node channels once (its own notice is not heard twice)', async (t) => {
  const pg = await startPostgres(t);
  const dirs = [tempDir('vad-compose-a-'), tempDir('vad-compose-b-')];
  const [a, b] = [await buildServer({ dataDir: dirs[0], database: pg.url(), dataPlane: null }), await buildServer({ dataDir: dirs[1], database: pg.url(), dataPlane: null })];
  try {
    const heard = { a: 0, b: 0 };
    a.services.changes.on(() => heard.a++);
    b.services.changes.on(() => heard.b++);
    const info = (await a.services.tokenLookup.find((await a.services.data.createToken('compose', 'owner')).token))!;
    const actor = { tokenId: info.id, role: 'owner' as const };
    for (const [round, max] of [[1, 7], [2, 8]] as const) {
      await a.services.limits.update(info.customer_id, actor, 'global', { max_sessions: max });
      assert.equal(heard.a, round, 'the instance that stored it woke its channels as it answered');
      // The other instance hears the notice; by then this one has had its own back too.
      for (let i = 0; i < 100 && heard.b < round; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(heard.b, round, 'the other instance hears it once');
      await a.services.data.upNodes('de-fra'); // a round trip after the notice: anything still on its way has come
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(heard, { a: round, b: round });
    }
  } finally {
    await a.app.close();
    await b.app.close();
    for (const d of dirs) removeDir(d);
  }
});
