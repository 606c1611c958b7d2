// Connection loss: PostgreSQL killed with kill -9 under a store, a LISTEN connection and an
// event feed. While it is down every operation fails fast with the API's
// `service_unavailable` (never a hang, never a crash of the process from an idle connection's
// error); after restart() everything works again by itself, notifications included. A transaction
// left open by a process that stopped (a hung instance) holds its row locks for
// IDLE_IN_TRANSACTION_MS at most, so another instance's write of the same row waits no longer. A
// database that refuses writes (read-only, as a standby) answers `service_unavailable` with why.
import assert from 'node:assert/strict';
import { after as afterAll, before as beforeAll, test } from 'node:test';
import pg, { type PoolClient } from 'pg';
import { ApiError, ERROR_STATUS } from '../../server/contract/errors.ts';
import type { SessionEvent } from '../../server/contract/schemas.ts';
import { PgEventFeed } from '../../server/events/pg-feed.ts';
import { PgListener } from '../../server/store/pg/listener.ts';
import { DatabaseUnavailable, IDLE_IN_TRANSACTION_MS, isConnectionLoss, openPool, RETRY_AFTER_SECONDS } from '../../server/store/pg/pool.ts';
import { CHANNELS, PgStore } from '../../server/store/pg/store.ts';
import { NODE_UP_SECONDS } from '../../server/store/repos/nodes.ts';
import { DatabaseUnwritable, UNWRITABLE_RETRY_SECONDS } from '../../server/store/sql/unwritable.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';

/** One server for the file (initdb is the slow part); each test takes its own database. */
let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server.destroy());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => Promise<T>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: still failing after ${ms} ms: ${err}`);
      await sleep(50);
    }
  }
}

function assertUnavailable(err: unknown): true {
  assert.ok(err instanceof DatabaseUnavailable, `expected DatabaseUnavailable, got ${err}`);
  assert.ok(err instanceof ApiError);
  assert.equal(err.code, 'service_unavailable');
  assert.equal(err.statusCode, 500);
  assert.equal(ERROR_STATUS.service_unavailable, 500);
  assert.equal(err.retryAfterSeconds, RETRY_AFTER_SECONDS);
  assert.deepEqual(err.toBody().error.details, { retry_after: RETRY_AFTER_SECONDS });
  return true;
}

test('kill -9 of PostgreSQL: fast service_unavailable while down, recovery by itself after restart', async (t) => {
  const url = await server.createDatabase('outage');
  const idleErrors: Error[] = [];
  const store = await PgStore.open(url, { max: 4, connectTimeoutMs: 1000, onIdleError: (e) => idleErrors.push(e) });
  const other = await PgStore.open(url, { max: 2, connectTimeoutMs: 1000 });
  let reconnects = 0;
  const listener = new PgListener(url, Object.values(CHANNELS), { connectTimeoutMs: 1000, maxBackoffMs: 300 });
  listener.onReconnect(() => reconnects++);
  await listener.ready;
  const feed = new PgEventFeed(store, listener, { pollMs: 600_000 });
  t.after(async () => {
    await feed.close();
    await listener.close();
    await Promise.all([store.close(), other.close()]);
  });

  const { token, info } = await store.createToken('acme', 'owner');
  const got: SessionEvent[] = [];
  feed.subscribe({ customerId: info.customer_id, filter: {}, afterId: 0, deliver: (e) => got.push(e) });
  const before = await other.insertEvent({
    customer_id: info.customer_id,
    session_id: 's',
    event_type: 'session_start',
    created_at: new Date().toISOString(),
    duration: 0,
    downloaded_bytes: 0,
    uploaded_bytes: 0,
  });
  await until(async () => assert.equal(got.length, 1), 5000, 'first delivery');
  // Warm every pooled connection so the kill finds idle ones to break.
  await Promise.all(Array.from({ length: 4 }, () => store.countCustomers()));

  // A query in flight when the server dies fails with the same error.
  const inFlight = store.pool.query('SELECT pg_sleep(20)').catch((err: unknown) => err);
  await sleep(200);
  await server.kill9();
  const flightErr = await inFlight;
  assert.ok(isConnectionLoss(flightErr), `in-flight query: ${flightErr}`);

  // While down: every kind of operation fails with service_unavailable, quickly.
  const ops: [string, () => Promise<unknown>][] = [
    ['findToken', () => store.findToken(token)],
    ['countCustomers', () => store.countCustomers()],
    ['createToken (a transaction)', () => store.createToken('acme', 'agent')],
    ['patchLimits (a transaction)', () => store.patchLimits(info.customer_id, 'global', { max_sessions: 1 })],
    ['insertEvent', () => store.insertEvent({ customer_id: 'x', session_id: 's', event_type: 'session_end', created_at: new Date().toISOString(), duration: 0, downloaded_bytes: 0, uploaded_bytes: 0 })],
    ['publish', () => feed.publish({ customerId: info.customer_id, sessionId: 's', type: 'session_end', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0 })],
  ];
  for (const [name, op] of ops) {
    const started = Date.now();
    await assert.rejects(op(), assertUnavailable, name);
    const took = Date.now() - started;
    // Bounded by the connect timeout (1 s) with room for a loaded machine; a hang would be 10 s+.
    assert.ok(took < 5000, `${name} failed in ${took} ms`);
  }
  // Twenty at once, as a burst of API requests would: all answered, none hangs.
  const burst = await Promise.allSettled(Array.from({ length: 20 }, () => store.getSession('nope')));
  assert.ok(burst.every((r) => r.status === 'rejected' && assertUnavailable(r.reason)));
  // The listener notices the lost connection when its socket says so (later on a loaded machine).
  await until(async () => assert.equal(listener.connected, false), 5000, 'the listener noticed the outage');

  await server.restart();

  // Back by itself: the same pool, the same listener, no call to reopen anything.
  assert.equal((await until(() => store.findToken(token), 15_000, 'findToken after restart'))?.id, info.id);
  assert.equal(await store.countCustomers(), 1, 'nothing committed before the kill is lost');
  assert.deepEqual((await store.eventsAfter(info.customer_id, 0, {}, 10)).map((e) => e.id), [before.id]);
  await until(async () => assert.equal(listener.connected, true), 15_000, 'LISTEN again');
  assert.ok(reconnects >= 1, 'consumers were told to re-read what they follow');

  // Notifications flow again: an event written by the other instance reaches the feed.
  const after = await other.insertEvent({
    customer_id: info.customer_id,
    session_id: 's',
    event_type: 'session_end',
    created_at: new Date().toISOString(),
    duration: 1,
    downloaded_bytes: 2,
    uploaded_bytes: 3,
  });
  assert.equal(after.id, before.id + 1, 'the failed writes during the outage left no hole');
  await until(async () => assert.deepEqual(got.map((e) => e.id), [before.id, after.id]), 5000, 'delivery after restart');
  assert.ok(idleErrors.length >= 1, 'the idle connections broken by the kill were reported, not thrown');
});

test('a cleanly stopped server: service_unavailable at start-up and per query, back after start', async (t) => {
  const store = await PgStore.open(server.url(), { connectTimeoutMs: 1000 });
  t.after(() => store.close());
  await store.countCustomers();
  await server.stop();
  await assert.rejects(store.listTokens(), assertUnavailable);
  await assert.rejects(PgStore.open(server.url(), { connectTimeoutMs: 1000 }), assertUnavailable, 'start-up without a database');
  await server.start();
  assert.equal(await until(() => store.countCustomers(), 15_000, 'after start'), 0);
  // A statement error is not connection loss: it is not mapped.
  await assert.rejects(store.pool.query('SELECT * FROM no_such_table'), (err: unknown) => !isConnectionLoss(err));
});

test('a transaction left open by a stopped process holds its locks IDLE_IN_TRANSACTION_MS at most, inside the nodes\' up window', async (t) => {
  const url = await server.createDatabase('hung');
  const hung = openPool(url, { max: 1 });
  const other = openPool(url, { max: 1 });
  let held: PoolClient | undefined;
  t.after(async () => {
    held?.release(true); // a pool ends only once its clients are back
    await Promise.all([hung.end(), other.end()]);
  });
  await other.query('CREATE TABLE nodes_like (id TEXT PRIMARY KEY, last_contact BIGINT NOT NULL)');
  await other.query("INSERT INTO nodes_like VALUES ('n1', 0)");
  // The hung instance: inside a transaction, the row locked by its write, then nothing more.
  held = await hung.connect();
  held.on('error', () => {});
  await held.query('BEGIN');
  await held.query("UPDATE nodes_like SET last_contact = 1 WHERE id = 'n1'");
  const started = Date.now();
  await other.query("UPDATE nodes_like SET last_contact = 2 WHERE id = 'n1'");
  const waited = Date.now() - started;
  t.diagnostic(`the other instance's write waited ${waited} ms (IDLE_IN_TRANSACTION_MS ${IDLE_IN_TRANSACTION_MS})`);
  assert.ok(waited >= IDLE_IN_TRANSACTION_MS - 200, `it waited for the lock: ${waited} ms`);
  assert.ok(waited < NODE_UP_SECONDS * 1000 / 2, `the lock went with the idle session, well inside the up window: ${waited} ms`);
  // The hung transaction was ended, not committed: its write is gone and its connection too.
  assert.equal((await other.query("SELECT last_contact FROM nodes_like WHERE id = 'n1'")).rows[0].last_contact, 2);
  await assert.rejects(held.query('SELECT 1'));
});

test('a read-only database (a standby after a failover): writes fail with service_unavailable naming why, reads answer, writes resume after', async (t) => {
  const url = await server.createDatabase('readonly');
  const name = new URL(url).pathname.slice(1);
  const store = await PgStore.open(url, { max: 1 });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.after(() => Promise.all([store.close(), admin.end()]));
  const { token, info } = await store.createToken('acme', 'owner');
  // New connections start read-only, and so does the one the pool holds.
  await admin.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = on`);
  await store.pool.query('SET default_transaction_read_only = on');
  for (const write of [() => store.createToken('acme', 'agent'), () => store.patchLimits(info.customer_id, 'global', { max_sessions: 1 })]) {
    await assert.rejects(write(), (err: unknown) => {
      assert.ok(err instanceof DatabaseUnwritable, `expected DatabaseUnwritable, got ${err}`);
      assert.equal(err.code, 'service_unavailable');
      assert.equal(err.retryAfterSeconds, UNWRITABLE_RETRY_SECONDS);
      assert.deepEqual(err.toBody().error.details, { reason: 'read_only', retry_after: UNWRITABLE_RETRY_SECONDS });
      assert.match(err.message, /cannot be written: it is read-only \(/);
      assert.match(String((err.cause as Error).message), /read-only transaction/);
      return true;
    });
  }
  assert.equal((await store.findToken(token))?.id, info.id, 'reads still answer');
  await admin.query(`ALTER DATABASE "${name}" RESET default_transaction_read_only`);
  await store.pool.query('SET default_transaction_read_only = off');
  await store.createToken('acme', 'agent');
  assert.equal((await store.listTokens()).filter((x) => x.customer_id === info.customer_id).length, 2, 'the refused writes left nothing, the next one is saved');
  assert.equal(await store.getLimitsRecord(info.customer_id, 'global'), undefined, 'the refused limits are not there');
});
