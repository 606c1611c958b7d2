// The usage thresholds repository on both databases: a crossing is recorded once per
// (customer, scope, entity, direction, threshold, period key), the winner alone queues its
// webhook in the same transaction (none when webhooks are off), concurrent callers (several
// connections on PostgreSQL) make one row and one delivery, the recorded thresholds read back
// lowest first, and fixed periods' rows are pruned while lifetime and rolling rows stay.
import assert from 'node:assert/strict';
import { thresholdOps as ops, type ThresholdCrossing } from '../../server/store/repos/thresholds.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { webhookOps, type QueuedEvent, type WebhookRow } from '../../server/store/repos/webhooks.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';

const T0 = '2026-11-25T10:00:00.000Z';
const P1 = Date.UTC(2026, 10, 1);
const P2 = Date.UTC(2026, 11, 1);

async function customer(db: DialectDb, name: string): Promise<string> {
  return (await db.run(tokenOps.ensureCustomer(name))).id;
}

function hook(id: string, customerId: string, events: string[]): WebhookRow {
  return {
    id, customer_id: customerId, url: `https://hooks.example.com/${id}`, events, enabled: true, secret_enc: 'sealed', secret_prefix: 'whsec_abcd',
    created_at: T0, updated_at: T0, consecutive_failures: 0, failing_since: null, disabled_reason: null, disabled_at: null, dropped: 0,
    last_error: null, last_error_at: null, next_retry_at: null,
  };
}

const crossing = (customerId: string, o: Partial<ThresholdCrossing> = {}): ThresholdCrossing => ({
  customer_id: customerId, scope: 'client', entity_id: 'alice', direction: 'download', threshold: 50,
  period_key: `${P1}|cap:1000|reset:0`, period_start: P1, used_bytes: 512, cap_bytes: 1000, crossed_at: T0, ...o,
});

const queued = (customerId: string, threshold: number) => ({
  event: { customerId, kind: 'usage_threshold', orderKey: 'customer', createdAt: T0, body: (id: string) => JSON.stringify({ id, threshold }) } satisfies QueuedEvent,
  now: Date.parse(T0),
  maxPending: 100,
});

const deliveries = async (db: DialectDb) => (await db.sql<{ body: string; event_type: string }>('SELECT body, event_type FROM webhook_deliveries ORDER BY seq')).map((d) => ({ ...d, body: JSON.parse(d.body) as { threshold: number } }));

eachDialect('thresholds: recorded once per key, the winner alone queues its webhook', async (db) => {
  const acme = await customer(db, 'acme');
  const globex = await customer(db, 'globex');
  await db.run(webhookOps.create(hook('w1', acme, ['usage_threshold'])));
  await db.run(webhookOps.create(hook('w2', acme, ['cap_reached'])));

  assert.equal(await db.run(ops.recordThreshold(crossing(acme), queued(acme, 50))), true);
  assert.equal(await db.run(ops.recordThreshold(crossing(acme, { used_bytes: 600 }), queued(acme, 50))), false, 'the same key again: nothing');
  let got = await deliveries(db);
  assert.equal(got.length, 1, 'one delivery, to the endpoint subscribed to usage_threshold only');
  assert.equal(got[0]!.event_type, 'usage_threshold');
  assert.equal(got[0]!.body.threshold, 50);

  // Every part of the key makes another crossing.
  const others: Partial<ThresholdCrossing>[] = [
    { threshold: 80 }, { direction: 'upload' }, { scope: 'session', entity_id: 'alice' }, { entity_id: 'bob' },
    { period_key: `${P2}|cap:1000|reset:0`, period_start: P2 }, { period_key: `${P1}|cap:2000|reset:0` },
  ];
  for (const o of others) assert.equal(await db.run(ops.recordThreshold(crossing(acme, o), null)), true, JSON.stringify(o));
  assert.equal(await db.run(ops.recordThreshold(crossing(globex), null)), true, 'another customer');
  assert.equal((await deliveries(db)).length, 1, 'no webhook queued when none is given (webhooks off)');

  assert.deepEqual(await db.run(ops.thresholdsCrossed(acme, 'client', 'alice', 'download', `${P1}|cap:1000|reset:0`)), [50, 80]);
  assert.deepEqual(await db.run(ops.thresholdsCrossed(acme, 'client', 'alice', 'upload', `${P1}|cap:1000|reset:0`)), [50]);
  assert.deepEqual(await db.run(ops.thresholdsCrossed(globex, 'client', 'bob', 'download', `${P1}|cap:1000|reset:0`)), []);
  const stored = await db.sql<{ used_bytes: number; cap_bytes: number; period_start: number }>(
    'SELECT used_bytes, cap_bytes, period_start FROM usage_thresholds WHERE customer_id = ? AND threshold = 50 AND entity_id = ? AND scope = ? AND direction = ? AND period_key = ?',
    acme, 'alice', 'client', 'download', `${P1}|cap:1000|reset:0`,
  );
  assert.deepEqual(stored.map((r) => ({ ...r })), [{ used_bytes: 512, cap_bytes: 1000, period_start: P1 }], 'the first caller\'s figures are kept');

  // Concurrent callers (separate connections on PostgreSQL): one row, one delivery.
  const race = await Promise.all(Array.from({ length: 6 }, () => db.run(ops.recordThreshold(crossing(acme, { threshold: 100 }), queued(acme, 100)))));
  assert.equal(race.filter(Boolean).length, 1, `exactly one caller wins (${JSON.stringify(race)})`);
  got = await deliveries(db);
  assert.deepEqual(got.map((d) => d.body.threshold), [50, 100]);
});

eachDialect('thresholds: fixed periods pruned, lifetime and rolling rows kept', async (db) => {
  const acme = await customer(db, 'acme');
  await db.run(ops.recordThreshold(crossing(acme), null));
  await db.run(ops.recordThreshold(crossing(acme, { period_key: `${P2}|cap:1000|reset:0`, period_start: P2 }), null));
  await db.run(ops.recordThreshold(crossing(acme, { period_key: 'lifetime|cap:1000|reset:0', period_start: 0 }), null));
  await db.run(ops.recordThreshold(crossing(acme, { period_key: 'rolling|cap:1000|reset:0', period_start: 0 }), null));
  assert.equal(await db.run(ops.pruneThresholds(P2)), 1);
  const keys = (await db.sql<{ period_key: string }>('SELECT period_key FROM usage_thresholds ORDER BY period_key')).map((r) => r.period_key);
  assert.deepEqual(keys, [`${P2}|cap:1000|reset:0`, 'lifetime|cap:1000|reset:0', 'rolling|cap:1000|reset:0']);
  // Pruned: the old period's threshold may be recorded again (a new row).
  assert.equal(await db.run(ops.recordThreshold(crossing(acme), null)), true);
});
