// The webhook store's health operations answer alike on SQLite and PostgreSQL: the pending cap
// (oldest dropped, counted), failures counted and reset by a success, the endpoint disabled by
// N failures in a row or by T of failing (its pending deliveries failed, nothing more queued for
// it), and enabling it again clearing what the server recorded.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openDatabase } from '../../server/store/db.ts';
import { PgStore } from '../../server/store/pg/store.ts';
import { PgWebhookStore } from '../../server/store/pg/webhooks.ts';
import { Store } from '../../server/store/store.ts';
import { SqliteWebhookStore, type QueuedEvent, type WebhookRow, type WebhookStore } from '../../server/store/webhooks.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

let server: PgServer;
before(async () => {
  server = await startPostgres();
});
after(() => server.destroy());

const T0 = '2026-11-25T10:00:00.000Z';

function hook(id: string, customerId: string): WebhookRow {
  return {
    id, customer_id: customerId, url: 'https://hooks.example.com/x', events: ['limits_changed'], enabled: true, secret_enc: 'sealed', secret_prefix: 'whsec_abcd',
    created_at: T0, updated_at: T0, consecutive_failures: 0, failing_since: null, disabled_reason: null, disabled_at: null, dropped: 0,
  };
}

const event = (customerId: string, i: number): QueuedEvent => ({ customerId, kind: 'limits_changed', orderKey: 'customer', createdAt: T0, body: (id) => JSON.stringify({ id, i }) });

async function scenario(s: WebhookStore, customerId: string): Promise<unknown[]> {
  const log: unknown[] = [];
  const health = async (id: string) => {
    const w = (await s.get(customerId, id))!;
    return { enabled: w.enabled, n: w.consecutive_failures, since: w.failing_since, reason: w.disabled_reason, at: w.disabled_at, dropped: w.dropped };
  };
  const statuses = async (id: string) => (await s.deliveries(customerId, id, 100)).map((d) => [d.status, JSON.parse(d.body).i, d.last_error]);
  await s.create(hook('hook-a', customerId));
  await s.create(hook('hook-b', customerId));

  // The cap: 8 queued with a cap of 3 keeps the newest 3, counts 5 dropped.
  for (let i = 0; i < 8; i++) log.push(['enqueue', await s.enqueue(event(customerId, i), 1000, 3)]);
  log.push(['capped', await health('hook-a'), await statuses('hook-a')]);

  const rule = { maxFailures: 3, maxFailingMs: 3_600_000 };
  const at = (ms: number) => new Date(Date.parse(T0) + ms);
  log.push(['fail 1', await s.recordFailure('hook-a', at(1000), rule), await health('hook-a')]);
  log.push(['fail 2', await s.recordFailure('hook-a', at(2000), rule), await health('hook-a')]);
  await s.recordSuccess('hook-a');
  log.push(['success', await health('hook-a')]);
  await s.recordFailure('hook-a', at(3000), rule);
  await s.recordFailure('hook-a', at(4000), rule);
  const disabled = await s.recordFailure('hook-a', at(5000), rule);
  log.push(['disabled', disabled && { id: disabled.id, enabled: disabled.enabled, reason: disabled.disabled_reason, n: disabled.consecutive_failures }, await health('hook-a'), await statuses('hook-a')]);
  log.push(['again', await s.recordFailure('hook-a', at(6000), rule)]);
  log.push(['not queued while disabled', await s.enqueue(event(customerId, 99), 1000, 3)]);

  // T: failing for an hour disables, whatever the count.
  await s.recordFailure('hook-b', at(0), { maxFailures: 1000, maxFailingMs: 3_600_000 });
  log.push(['b before T', await s.recordFailure('hook-b', at(3_599_000), { maxFailures: 1000, maxFailingMs: 3_600_000 })]);
  log.push(['b at T', (await s.recordFailure('hook-b', at(3_600_000), { maxFailures: 1000, maxFailingMs: 3_600_000 }))?.disabled_reason, await health('hook-b')]);

  // Enabled again: a fresh count; other patches leave the record as it is.
  await s.update(customerId, 'hook-b', { events: ['limits_changed', 'session_end'] }, T0);
  log.push(['patched while disabled', await health('hook-b')]);
  const back = await s.update(customerId, 'hook-a', { enabled: true }, T0);
  log.push(['enabled', back && { enabled: back.enabled, reason: back.disabled_reason, n: back.consecutive_failures }, await health('hook-a')]);
  return log;
}

test('webhook health: the same answers on SQLite and PostgreSQL', async (t) => {
  const dir = tempDir('vad-whh-store-');
  t.after(() => removeDir(dir));
  const sqlite = new Store(openDatabase(join(dir, 'data')));
  const a = (await sqlite.createToken('acme', 'owner')).info.customer_id;
  const expected = await scenario(new SqliteWebhookStore(sqlite.db), a);
  sqlite.db.close();

  const pgStore = await PgStore.open(await server.createDatabase('webhook_health'));
  t.after(() => pgStore.close());
  const b = (await pgStore.createToken('acme', 'owner')).info.customer_id;
  const actual = JSON.parse(JSON.stringify(await scenario(new PgWebhookStore(pgStore.pool), b)));
  assert.deepEqual(actual, JSON.parse(JSON.stringify(expected)));

  // What the scenario must show, beyond agreeing.
  const step = (name: string) => (expected as unknown[][]).find((s) => s[0] === name)!;
  assert.deepEqual(step('capped')[1], { enabled: true, n: 0, since: null, reason: null, at: null, dropped: 5 });
  assert.deepEqual((step('capped')[2] as unknown[][]).map((d) => d[1]), [7, 6, 5]);
  assert.deepEqual((step('fail 2')[2] as { n: number }).n, 2);
  assert.deepEqual(step('success')[1], { enabled: true, n: 0, since: null, reason: null, at: null, dropped: 5 });
  assert.deepEqual(step('disabled')[1], { id: 'hook-a', enabled: false, reason: '3 delivery attempts failed in a row', n: 3 });
  assert.deepEqual((step('disabled')[3] as unknown[][]).map((d) => [d[0], d[2]]), Array(3).fill(['failed', 'not sent: the endpoint was disabled after failing']));
  assert.equal(step('again')[1], undefined);
  assert.equal(step('not queued while disabled')[1], 1, 'only hook-b');
  assert.equal(step('b before T')[1], undefined);
  assert.equal(step('b at T')[1], 'deliveries failed for 1 h without a success');
  assert.equal((step('patched while disabled')[1] as { reason: string }).reason, 'deliveries failed for 1 h without a success');
  assert.deepEqual(step('enabled')[1], { enabled: true, reason: null, n: 0 });
  assert.deepEqual(step('enabled')[2], { enabled: true, n: 0, since: null, reason: null, at: null, dropped: 5 });
});
