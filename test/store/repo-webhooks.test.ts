// The webhooks repository on both databases: endpoints (create, list, get, patch, delete,
// count), the outbox (enqueue to the subscribed enabled endpoints, the copy of the event log
// after its cursor, leases with at most one delivery in flight per order key, outcomes, pruning,
// leases released at start), and the health rules (the pending cap and its dropped count,
// failures in a row reset by a success, the endpoint disabled by N failures or T of failing with
// its pending deliveries failed, enabling it again clearing what the server recorded).
import assert from 'node:assert/strict';
import { get, tx, type Op } from '../../server/store/sql/op.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { NOT_SENT_DISABLED, type LoggedEvent, type QueuedEvent, type WebhookRow, type WebhookStore, webhookOps } from '../../server/store/repos/webhooks.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';

const T0 = '2026-11-25T10:00:00.000Z';

/** The operations bound to one test database, as the service sees them. */
function storeOf(db: DialectDb): WebhookStore {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(webhookOps)) out[name] = (...a: never[]) => db.run((fn as (...x: never[]) => Op<unknown>)(...a));
  return out as WebhookStore;
}

async function customer(db: DialectDb, name = 'acme'): Promise<string> {
  return (await db.run(tokenOps.ensureCustomer(name))).id;
}

function hook(id: string, customerId: string, events = ['limits_changed'], createdAt = T0): WebhookRow {
  return {
    id, customer_id: customerId, url: `https://hooks.example.com/${id}`, events, enabled: true, secret_enc: 'sealed', secret_prefix: 'whsec_abcd',
    created_at: createdAt, updated_at: createdAt, consecutive_failures: 0, failing_since: null, disabled_reason: null, disabled_at: null, dropped: 0,
    last_error: null, last_error_at: null, next_retry_at: null,
  };
}

const event = (customerId: string, i: number, orderKey = 'customer', kind = 'limits_changed'): QueuedEvent => ({
  customerId, kind, orderKey, createdAt: T0, body: (id) => JSON.stringify({ id, i }),
});

eachDialect('webhooks: endpoints are created, listed, patched, counted and deleted', async (db) => {
  const s = storeOf(db);
  const a = await customer(db);
  const b = await customer(db, 'other');
  await s.create(hook('w2', a, ['session_end'], '2026-11-25T10:00:01.000Z'));
  await s.create(hook('w1', a));
  await s.create(hook('w3', b));
  assert.deepEqual((await s.list(a)).map((w) => w.id), ['w1', 'w2'], 'oldest first');
  assert.deepEqual(await s.get(a, 'w1'), hook('w1', a));
  assert.equal(await s.get(b, 'w1'), undefined, 'another customer sees nothing');
  assert.equal(await s.count(a), 2);

  const patched = await s.update(a, 'w1', { url: 'https://hooks.example.com/new', enabled: false }, '2026-11-25T11:00:00.000Z');
  assert.deepEqual(patched, { ...hook('w1', a), url: 'https://hooks.example.com/new', enabled: false, updated_at: '2026-11-25T11:00:00.000Z' });
  assert.deepEqual(await s.get(a, 'w1'), patched);
  assert.equal(await s.update(b, 'w1', { enabled: true }, T0), undefined);

  assert.equal(await s.enqueue({ ...event(a, 1, 'customer', 'session_end'), createdAt: '2026-11-25T10:00:02.000Z' }, 1000, 10), 1);
  assert.equal(await s.delete(b, 'w2'), false);
  assert.equal(await s.delete(a, 'w2'), true);
  assert.equal(await s.delete(a, 'w2'), false);
  assert.equal(await s.count(a), 1);
  assert.equal((await db.sql('SELECT seq FROM webhook_deliveries')).length, 0, 'its deliveries go with it');
});

eachDialect('webhooks: enqueue reaches the enabled endpoints subscribed to the kind, made before the event', async (db) => {
  const s = storeOf(db);
  const a = await customer(db);
  await s.create(hook('subscribed', a));
  await s.create(hook('other-kind', a, ['session_end']));
  await s.create(hook('later', a, ['limits_changed'], '2026-11-25T12:00:00.000Z'));
  await s.create({ ...hook('off', a), enabled: false });
  assert.equal(await s.enqueue(event(a, 1), 1000, 10), 1);
  const [d] = await s.deliveries(a, 'subscribed', 10);
  assert.deepEqual(JSON.parse(d.body), { id: d.id, i: 1 }, 'the body carries the delivery id');
  assert.deepEqual([d.status, d.attempts, d.next_attempt_at, d.order_key, d.event_type, d.created_at], ['pending', 0, 1000, 'customer', 'limits_changed', T0]);
});

eachDialect('webhooks: the event log is copied into the outbox after its cursor, once', async (db) => {
  const s = storeOf(db);
  const a = await customer(db);
  await s.create(hook('w', a, ['session_end']));
  const toQueued = (e: LoggedEvent): QueuedEvent => ({ customerId: e.customer_id, kind: e.event_type, orderKey: `session:${e.session_id}`, createdAt: T0, body: () => JSON.stringify(e) });
  assert.equal(await s.fanOut(toQueued, 2, 1000, 100), 0, 'nothing logged yet');
  for (let id = 1; id <= 3; id++) {
    await db.sql('INSERT INTO events (id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', id, a, 's1', 'session_end', T0, id, 10 * id, 20 * id);
  }
  assert.equal(await s.fanOut(toQueued, 2, 1000, 100), 2, 'a batch of at most the limit');
  assert.equal(await s.fanOut(toQueued, 2, 1000, 100), 1);
  assert.equal(await s.fanOut(toQueued, 2, 1000, 100), 0, 'the cursor moved past them');
  const bodies = (await s.deliveries(a, 'w', 10)).map((d) => JSON.parse(d.body) as LoggedEvent);
  assert.deepEqual(bodies.reverse(), [1, 2, 3].map((id) => ({ id, customer_id: a, session_id: 's1', event_type: 'session_end', created_at: T0, duration: id, downloaded_bytes: 10 * id, uploaded_bytes: 20 * id })));
  assert.deepEqual((await db.sql<{ id: number }>('SELECT last_event_id AS id FROM webhook_cursor')).map((r) => Number(r.id)), [3]);
});

eachDialect('webhooks: while one copies the event log, another copies nothing (PostgreSQL: the cursor row is locked)', async (db, t) => {
  if (db.dialect === 'sqlite') return t.skip('one process per data folder: its single writer already orders the copies');
  const s = storeOf(db);
  const a = await customer(db);
  await s.create(hook('w', a, ['session_end']));
  await db.sql('INSERT INTO events (id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes) VALUES (1, ?, ?, ?, ?, 0, 0, 0)', a, 's1', 'session_end', T0);
  const toQueued = (e: LoggedEvent): QueuedEvent => ({ customerId: e.customer_id, kind: e.event_type, orderKey: 'o', createdAt: T0, body: () => '{}' });
  // Another instance's copy (or enqueue) holding the cursor row for a moment.
  const holding = db.run(
    tx(function* () {
      yield* get('SELECT last_event_id FROM webhook_cursor WHERE id = 1 FOR UPDATE');
      yield* get('SELECT pg_sleep(1.5)');
    })(),
  );
  // The lock is held once that transaction sleeps (its FOR UPDATE returned): a fixed wait here
  // was too short on a loaded machine.
  for (let i = 0; i < 250; i++) {
    const [row] = await db.sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(1.5)%'`);
    if (Number(row.n) > 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(await s.fanOut(toQueued, 10, 1000, 100), 0, 'skipped, not waited for');
  await holding;
  assert.equal(await s.fanOut(toQueued, 10, 1000, 100), 1);
  assert.equal((await s.deliveries(a, 'w', 10)).length, 1);
});

eachDialect('webhooks: leases, one in flight per order key, outcomes', async (db) => {
  const s = storeOf(db);
  const a = await customer(db);
  await s.create(hook('w', a));
  await s.enqueue(event(a, 1, 'session:x'), 1000, 10);
  await s.enqueue(event(a, 2, 'session:x'), 1000, 10);
  await s.enqueue(event(a, 3, 'session:y'), 5000, 10);
  const i = (d: { body: string }) => (JSON.parse(d.body) as { i: number }).i;

  const first = await s.claimDue(1000, 100, 10);
  assert.deepEqual(first.map(i), [1], 'x:2 waits behind x:1; y:3 is not due yet');
  assert.deepEqual([first[0].url, first[0].secret_enc], ['https://hooks.example.com/w', 'sealed']);
  assert.deepEqual(await s.claimDue(1050, 100, 10), [], 'leased');
  const again = await s.claimDue(1101, 100, 10);
  assert.deepEqual(again.map(i), [1], 'the lease ran out: sent again with the same id');
  assert.equal(again[0].id, first[0].id);

  assert.equal((await s.get(a, 'w'))!.next_retry_at, null, 'no retry waits before a failed attempt');
  await s.complete(again[0].seq, { kind: 'retry', statusCode: 503, error: 'HTTP 503', nextAttemptAt: 3000 });
  assert.equal((await s.get(a, 'w'))!.next_retry_at, 3000, 'the endpoint shows its next retry');
  assert.equal((await s.list(a))[0]!.next_retry_at, 3000);
  assert.deepEqual(await s.claimDue(2000, 100, 10), [], 'x:1 waits for its retry and x:2 behind it');
  const retried = await s.claimDue(3000, 100, 10);
  assert.deepEqual(retried.map((d) => [i(d), d.attempts, d.last_status_code, d.last_error]), [[1, 1, 503, 'HTTP 503']]);
  await s.complete(retried[0].seq, { kind: 'delivered', statusCode: 204, at: T0 });
  assert.deepEqual((await s.claimDue(3000, 10_000, 10)).map(i), [2], 'x:1 delivered: x:2 goes');
  const both = await s.claimDue(5000, 100, 10);
  assert.deepEqual(both.map(i), [3]);
  await s.complete(both[0].seq, { kind: 'failed', statusCode: null, error: 'refused' });

  const rows = await s.deliveries(a, 'w', 10);
  assert.deepEqual(rows.map((d) => [i(d), d.status, d.attempts, d.last_status_code, d.last_error, d.delivered_at]), [
    [3, 'failed', 1, null, 'refused', null],
    [2, 'pending', 0, null, null, null],
    [1, 'delivered', 2, 204, null, T0],
  ]);
  assert.deepEqual((await s.deliveries(a, 'w', 1)).map(i), [3], 'newest first, at most the limit');

  // At start: SQLite (one process per folder) drops every lease; on PostgreSQL leases only run out.
  await s.releaseLeases();
  assert.equal((await s.claimDue(5001, 100, 10)).length, db.dialect === 'sqlite' ? 1 : 0);

  // Finished deliveries created before the time go, at most `limit` at a time; pending ones stay.
  assert.equal(await s.prune('2026-11-25T10:00:00.001Z', 1), 1);
  assert.equal(await s.prune('2026-11-25T10:00:00.001Z', 10), 1);
  assert.equal(await s.prune('2026-11-25T10:00:00.001Z', 10), 0);
  assert.deepEqual((await s.deliveries(a, 'w', 10)).map(i), [2]);
});

eachDialect('webhooks: senders claiming at once take each delivery once', async (db) => {
  const s = storeOf(db);
  const a = await customer(db);
  await s.create(hook('w', a));
  for (let n = 0; n < 20; n++) await s.enqueue(event(a, n, `session:${n}`), 1000, 100);
  const claims = await Promise.all([0, 1, 2, 3].map(() => s.claimDue(1000, 60_000, 20)));
  const seqs = claims.flat().map((d) => d.seq);
  assert.equal(seqs.length, 20);
  assert.equal(new Set(seqs).size, 20);
  // Failures recorded at once are all counted.
  const rule = { maxFailures: 100, maxFailingMs: 3_600_000 };
  await Promise.all([0, 1, 2, 3].map(() => s.recordFailure('w', new Date(T0), rule, 'HTTP 500')));
  assert.equal((await s.get(a, 'w'))!.consecutive_failures, 4);
});

eachDialect('webhooks: health — the cap, failures in a row, disabling and enabling again', async (db) => {
  const s = storeOf(db);
  const a = await customer(db);
  const health = async (id: string) => {
    const w = (await s.get(a, id))!;
    return { enabled: w.enabled, n: w.consecutive_failures, since: w.failing_since, reason: w.disabled_reason, at: w.disabled_at, dropped: w.dropped };
  };
  const statuses = async (id: string) => (await s.deliveries(a, id, 100)).map((d) => [d.status, (JSON.parse(d.body) as { i: number }).i, d.last_error]);
  await s.create(hook('hook-a', a));
  await s.create(hook('hook-b', a));

  // The cap: 8 queued with a cap of 3 keeps the newest 3, counts 5 dropped.
  for (let i = 0; i < 8; i++) assert.equal(await s.enqueue(event(a, i), 1000, 3), 2);
  assert.deepEqual(await health('hook-a'), { enabled: true, n: 0, since: null, reason: null, at: null, dropped: 5 });
  assert.deepEqual((await statuses('hook-a')).map((d) => d[1]), [7, 6, 5]);

  const rule = { maxFailures: 3, maxFailingMs: 3_600_000 };
  const at = (ms: number) => new Date(Date.parse(T0) + ms);
  assert.equal(await s.recordFailure('hook-a', at(1000), rule, 'HTTP 503'), undefined);
  assert.equal(await s.recordFailure('hook-a', at(2000), rule, 'HTTP 503'), undefined);
  assert.deepEqual(await health('hook-a'), { enabled: true, n: 2, since: at(1000).toISOString(), reason: null, at: null, dropped: 5 });
  const failed = (await s.get(a, 'hook-a'))!;
  assert.deepEqual([failed.last_error, failed.last_error_at], ['HTTP 503', at(2000).toISOString()], 'the last error and when');
  await s.recordSuccess('hook-a');
  assert.deepEqual(await health('hook-a'), { enabled: true, n: 0, since: null, reason: null, at: null, dropped: 5 });
  assert.equal((await s.get(a, 'hook-a'))!.last_error, 'HTTP 503', 'the last error is kept after a success');
  await s.recordFailure('hook-a', at(3000), rule, 'HTTP 503');
  await s.recordFailure('hook-a', at(4000), rule, 'HTTP 503');
  const disabled = await s.recordFailure('hook-a', at(5000), rule, 'HTTP 503');
  const reason = '3 delivery attempts failed in a row';
  assert.deepEqual(disabled && [disabled.id, disabled.enabled, disabled.disabled_reason, disabled.consecutive_failures], ['hook-a', false, reason, 3]);
  assert.deepEqual(await health('hook-a'), { enabled: false, n: 3, since: at(3000).toISOString(), reason, at: at(5000).toISOString(), dropped: 5 });
  assert.deepEqual((await statuses('hook-a')).map((d) => [d[0], d[2]]), Array(3).fill(['failed', NOT_SENT_DISABLED]));
  assert.equal(await s.recordFailure('hook-a', at(6000), rule, 'HTTP 503'), undefined, 'a disabled endpoint counts no more');
  assert.equal(await s.enqueue(event(a, 99), 1000, 3), 1, 'only hook-b: nothing is queued for a disabled endpoint');

  // T: failing for an hour disables, whatever the count.
  const slow = { maxFailures: 1000, maxFailingMs: 3_600_000 };
  await s.recordFailure('hook-b', at(0), slow, 'HTTP 503');
  assert.equal(await s.recordFailure('hook-b', at(3_599_000), slow, 'HTTP 503'), undefined);
  assert.equal((await s.recordFailure('hook-b', at(3_600_000), slow, 'HTTP 503'))?.disabled_reason, 'deliveries failed for 1 h without a success');

  // Enabled again: a fresh count; other patches leave the record as it is.
  await s.update(a, 'hook-b', { events: ['limits_changed', 'session_end'] }, T0);
  assert.equal((await health('hook-b')).reason, 'deliveries failed for 1 h without a success');
  const back = await s.update(a, 'hook-a', { enabled: true }, T0);
  assert.deepEqual(back && [back.enabled, back.disabled_reason, back.consecutive_failures], [true, null, 0]);
  assert.deepEqual(await health('hook-a'), { enabled: true, n: 0, since: null, reason: null, at: null, dropped: 5 });
});
