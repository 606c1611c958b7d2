// The usage-history repository on both databases: additions summed per session, node and
// minute (unknown sessions dropped), reads per step with every filter, the top clients, roll-ups
// that keep every sum, bounded prunes, and three simulated days written and compacted by the
// real history writer (server/usage/history.ts) with the same sums on SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../server/log.ts';
import { usageOps as ops, type UsageQuery, type UsageSum } from '../../server/store/repos/usage.ts';
import { UsageHistory } from '../../server/usage/history.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';
import { addCustomer, addSession } from '../helpers/store-rows.ts';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

const all = (customer_id: string, extra: Partial<UsageQuery> = {}): UsageQuery => ({
  customer_id,
  from: 0,
  to: T0 + 10_000 * DAY,
  stepMs: DAY,
  steps: ['minute', 'hour', 'day'],
  ...extra,
});
const total = (rows: UsageSum[]) => rows.reduce((a, r) => ({ up: a.up + r.uploaded_bytes, down: a.down + r.downloaded_bytes }), { up: 0, down: 0 });
const add = (session_id: string, node: string, start: number, up: number, down: number) => ({ session_id, node, start, uploaded_bytes: up, downloaded_bytes: down });

async function twoCustomers(db: DialectDb) {
  const acme = await addCustomer(db, 'acme');
  const globex = await addCustomer(db, 'globex');
  return {
    acme,
    globex,
    alice: await addSession(db, acme, 'alice'),
    bob: await addSession(db, acme, 'bob', { zone: 'nl-ams' }),
    other: await addSession(db, globex, 'alice'),
  };
}

eachDialect('usage: additions per minute bucket, reads with filters, top clients', async (db) => {
  const s = await twoCustomers(db);
  await db.run(ops.addUsage([]));
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 0, hour: 0, day: 0 });
  await db.run(
    ops.addUsage([
      add(s.alice, 'local', T0, 100, 1000),
      add(s.alice, 'local', T0, 6, 60), // the same bucket twice in one batch: summed
      add(s.alice, 'sao-1', T0, 5, 50),
      add(s.alice, 'local', T0 + MINUTE, 7, 70),
      add(s.bob, 'local', T0 + 2 * MINUTE, 20, 2),
      add(s.other, 'local', T0, 1, 1),
      add(randomUUID(), 'local', T0, 9, 9), // a session the store does not know: dropped
    ]),
  );
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 5, hour: 0, day: 0 });
  // copied from the session row: customer, client, zone
  const rows = await db.sql<{ customer_id: string; client_id: string; zone: string }>('SELECT customer_id, client_id, zone FROM usage_buckets WHERE session_id = ?', s.bob);
  assert.deepEqual({ ...rows[0] }, { customer_id: s.acme, client_id: 'bob', zone: 'nl-ams' });

  const minutes = await db.run(ops.usageBuckets(all(s.acme, { stepMs: MINUTE, from: T0, to: T0 + 10 * MINUTE })));
  assert.deepEqual(minutes, [
    { start: T0, uploaded_bytes: 111, downloaded_bytes: 1110 },
    { start: T0 + MINUTE, uploaded_bytes: 7, downloaded_bytes: 70 },
    { start: T0 + 2 * MINUTE, uploaded_bytes: 20, downloaded_bytes: 2 },
  ]);
  // a later write into the same minute adds to its row
  await db.run(ops.addUsage([add(s.alice, 'local', T0, 3, 30)]));
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 5, hour: 0, day: 0 });
  assert.deepEqual(await db.run(ops.usageBuckets(all(s.acme, { stepMs: HOUR }))), [{ start: T0, uploaded_bytes: 141, downloaded_bytes: 1212 }]);

  // filters: node, client, session, zone, range, steps, customer
  assert.deepEqual(total(await db.run(ops.usageBuckets(all(s.acme, { node: 'sao-1' })))), { up: 5, down: 50 });
  assert.deepEqual(total(await db.run(ops.usageBuckets(all(s.acme, { client_id: 'alice' })))), { up: 121, down: 1210 });
  assert.deepEqual(total(await db.run(ops.usageBuckets(all(s.acme, { session_id: s.bob })))), { up: 20, down: 2 });
  assert.deepEqual(total(await db.run(ops.usageBuckets(all(s.acme, { zone: 'nl-ams' })))), { up: 20, down: 2 });
  assert.deepEqual(total(await db.run(ops.usageBuckets(all(s.acme, { from: T0 + MINUTE, to: T0 + 2 * MINUTE })))), { up: 7, down: 70 });
  assert.deepEqual(await db.run(ops.usageBuckets(all(s.acme, { steps: ['hour', 'day'] }))), []);
  assert.deepEqual(total(await db.run(ops.usageBuckets(all(s.globex)))), { up: 1, down: 1 });

  // top clients: most bytes first, at most `limit`, within the filters
  assert.deepEqual(await db.run(ops.usageTopClients(all(s.acme), 10)), [
    { client_id: 'alice', uploaded_bytes: 121, downloaded_bytes: 1210 },
    { client_id: 'bob', uploaded_bytes: 20, downloaded_bytes: 2 },
  ]);
  assert.deepEqual((await db.run(ops.usageTopClients(all(s.acme), 1))).map((c) => c.client_id), ['alice']);
  assert.deepEqual((await db.run(ops.usageTopClients(all(s.acme, { zone: 'nl-ams' }), 10))).map((c) => c.client_id), ['bob']);
  // equal traffic: by client id
  await db.run(ops.addUsage([add(s.bob, 'local', T0 + 3 * MINUTE, 101, 1208)]));
  assert.deepEqual((await db.run(ops.usageTopClients(all(s.acme), 10))).map((c) => c.client_id), ['alice', 'bob']);
});

eachDialect('usage: roll-ups keep the sums, prunes take the oldest rows in bounded batches', async (db) => {
  const s = await twoCustomers(db);
  // two hours of minutes for alice on two nodes, one for bob
  const adds = [];
  for (let m = 0; m < 120; m++) {
    adds.push(add(s.alice, 'local', T0 + m * MINUTE, 1, 10), add(s.alice, 'sao-1', T0 + m * MINUTE, 2, 20));
    if (m < 60) adds.push(add(s.bob, 'local', T0 + m * MINUTE, 3, 30));
  }
  await db.run(ops.addUsage(adds));
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 300, hour: 0, day: 0 });
  const sums = async () => [total(await db.run(ops.usageBuckets(all(s.acme, { client_id: 'alice' })))), total(await db.run(ops.usageBuckets(all(s.acme, { client_id: 'bob' }))))];
  const before = await sums();

  // nothing older than the cutoff: nothing moved
  assert.equal(await db.run(ops.rollupUsage('minute', 'hour', T0, 100)), 0);
  // the first hour, in batches: each returns how many it moved, the last fewer than the batch
  const moved: number[] = [];
  for (let n = -1; n !== 0; ) moved.push((n = await db.run(ops.rollupUsage('minute', 'hour', T0 + HOUR, 70))));
  assert.deepEqual(moved, [70, 70, 40, 0]);
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 120, hour: 3, day: 0 });
  assert.deepEqual(await sums(), before);
  const hours = await db.run(ops.usageBuckets(all(s.acme, { stepMs: HOUR, steps: ['hour'] })));
  assert.deepEqual(hours, [{ start: T0, uploaded_bytes: 60 * 6, downloaded_bytes: 60 * 60 }]);
  // the second hour by two compactions at once (two instances on PostgreSQL): no row moved twice
  const both = await Promise.all([db.run(ops.rollupUsage('minute', 'hour', T0 + 2 * HOUR, 70)), db.run(ops.rollupUsage('minute', 'hour', T0 + 2 * HOUR, 70))]);
  assert.equal(both[0] + both[1] + (await db.run(ops.rollupUsage('minute', 'hour', T0 + 2 * HOUR, 70))), 120);
  assert.deepEqual(await sums(), before);
  // then hours into days: an existing day bucket takes more on top
  assert.equal(await db.run(ops.rollupUsage('hour', 'day', T0 + HOUR, 1000)), 3);
  assert.equal(await db.run(ops.rollupUsage('hour', 'day', T0 + 2 * HOUR, 1000)), 2);
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 0, hour: 0, day: 3 });
  assert.deepEqual(await sums(), before);
  const day = Math.floor(T0 / DAY) * DAY;
  assert.deepEqual(await db.run(ops.usageBuckets(all(s.acme, { stepMs: DAY, steps: ['day'] }))), [{ start: day, uploaded_bytes: 120 * 3 + 60 * 3, downloaded_bytes: 120 * 30 + 60 * 30 }]);

  // prunes: at most `limit` rows, of the step, older than the cutoff
  await db.run(ops.addUsage([add(s.alice, 'local', T0 + 3 * DAY, 1, 1)]));
  assert.equal(await db.run(ops.pruneUsage('day', day, 10)), 0);
  assert.equal(await db.run(ops.pruneUsage('day', day + 1, 2)), 2);
  assert.equal(await db.run(ops.pruneUsage('day', day + 1, 2)), 1);
  assert.equal(await db.run(ops.pruneUsage('day', day + 1, 2)), 0);
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 1, hour: 0, day: 0 });
  assert.equal(await db.run(ops.pruneUsage('minute', T0 + 4 * DAY, 5)), 1);
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 0, hour: 0, day: 0 });
});

eachDialect('usage: three days written and compacted as they go: bounded rows, exact sums at every step', async (db) => {
  let now = T0;
  const store = {
    addUsage: (a: Parameters<typeof ops.addUsage>[0]) => db.run(ops.addUsage(a)),
    rollupUsage: (...a: Parameters<typeof ops.rollupUsage>) => db.run(ops.rollupUsage(...a)),
    pruneUsage: (...a: Parameters<typeof ops.pruneUsage>) => db.run(ops.pruneUsage(...a)),
  };
  const h = new UsageHistory(store, silentLogger, { now: () => now, flushMs: 1e9, compactMs: 0 });
  const s = await twoCustomers(db);
  const added = { a: { up: 0, down: 0 }, b: { up: 0, down: 0 }, g: { up: 0, down: 0 } };
  let maxMinuteRows = 0;
  // every 30 s for 3 days: alice always, bob every other time, globex now and then
  for (let i = 0; i < 3 * 24 * 120; i++) {
    now = T0 + i * 30_000;
    h.add(s.alice, 'local', 10, 100);
    added.a.up += 10;
    added.a.down += 100;
    if (i % 2) {
      h.add(s.bob, i % 4 === 1 ? 'local' : 'sao-1', 3, 7);
      added.b.up += 3;
      added.b.down += 7;
    }
    if (i % 37 === 0) {
      h.add(s.other, 'local', 1000, 1);
      added.g.up += 1000;
      added.g.down += 1;
    }
    if (i % 20 === 0) await h.flush();
    if (i % 30 === 0) {
      await h.compact(50);
      maxMinuteRows = Math.max(maxMinuteRows, (await db.run(ops.usageRowCounts())).minute);
    }
  }
  await h.flush();
  await h.compact(50);
  const perMinute = 4; // alice, bob on two nodes, globex
  assert.ok(maxMinuteRows <= perMinute * (24 * 60 + 60 + 15), `minute rows peaked at ${maxMinuteRows}`);
  const n = await db.run(ops.usageRowCounts());
  assert.ok(n.minute <= perMinute * (24 * 60 + 60), JSON.stringify(n));
  assert.ok(n.hour > 0 && n.hour <= perMinute * 3 * 24, JSON.stringify(n));
  const sum = async (q: UsageQuery) => total(await db.run(ops.usageBuckets(q)));
  assert.deepEqual(await sum(all(s.acme, { session_id: s.alice })), added.a);
  assert.deepEqual(await sum(all(s.acme, { client_id: 'bob' })), added.b);
  assert.deepEqual(await sum(all(s.acme)), { up: added.a.up + added.b.up, down: added.a.down + added.b.down });
  assert.deepEqual(await sum(all(s.globex)), added.g);
  // hour buckets of the first day: 24, each 120 additions of alice and 60 of bob
  const hours = await db.run(ops.usageBuckets(all(s.acme, { stepMs: HOUR, steps: ['minute', 'hour'], from: T0, to: T0 + DAY })));
  assert.equal(hours.length, 24);
  for (const r of hours) assert.deepEqual([r.uploaded_bytes, r.downloaded_bytes], [120 * 10 + 60 * 3, 120 * 100 + 60 * 7]);
  // 100 days on: days only; past two years: nothing
  now += 100 * DAY;
  await h.compact(7);
  const later = await db.run(ops.usageRowCounts());
  assert.equal(later.minute + later.hour, 0);
  assert.ok(later.day <= perMinute * 4, JSON.stringify(later));
  assert.deepEqual(await sum(all(s.acme)), { up: added.a.up + added.b.up, down: added.a.down + added.b.down });
  now += 800 * DAY;
  await h.compact();
  assert.deepEqual(await db.run(ops.usageRowCounts()), { minute: 0, hour: 0, day: 0 });
  await h.close();
});
