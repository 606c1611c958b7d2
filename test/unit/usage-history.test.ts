// The usage history writer and compaction (server/usage/history.ts) on a real SQLite store, with
// an injected clock: additions accumulate per (session, node, minute) and are written in one
// batch; a failed write is kept and written once later (no byte lost, none twice); three
// simulated days of traffic compacted as they go keep at most a day (plus an hour) of minute
// rows while the sums over any step stay those added.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sqliteControlStore } from '../../server/store/control.ts';
import type { Store, UsageQuery } from '../../server/store/store.ts';
import { UsageHistory, type UsageStore } from '../../server/usage/history.ts';
import { silentLogger } from '../../server/log.ts';
import { openDatabase } from '../../server/store/db.ts';
import { Store as SqliteStore } from '../../server/store/store.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

/** A store on a fresh data folder for an async test; closed and removed afterwards. */
async function withStore(use: (store: Store) => Promise<void>): Promise<void> {
  const dir = tempDir('vad-usage-unit-');
  const store = new SqliteStore(openDatabase(dir));
  try {
    await use(store);
  } finally {
    store.db.close();
    removeDir(dir);
  }
}

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

function sessionOf(store: Store, customer: string, client: string, zone = 'de-fra'): { id: string; customerId: string } {
  const { id: customerId } = store.ensureCustomer(customer);
  const id = randomUUID();
  store.insertSession({ id, customer_id: customerId, client_id: client, zone, reusable: true, created_at: new Date(T0).toISOString() });
  return { id, customerId };
}

const all = (customer_id: string, extra: Partial<UsageQuery> = {}): UsageQuery => ({
  customer_id,
  from: 0,
  to: T0 + 10_000 * DAY,
  stepMs: DAY,
  steps: ['minute', 'hour', 'day'],
  ...extra,
});
const total = (rows: { uploaded_bytes: number; downloaded_bytes: number }[]) =>
  rows.reduce((a, r) => ({ up: a.up + r.uploaded_bytes, down: a.down + r.downloaded_bytes }), { up: 0, down: 0 });

test('additions are summed per session, node and minute, and written in one batch', async () => {
  await withStore(async (store) => {
    let now = T0 + 5_000;
    const h = new UsageHistory(sqliteControlStore(store), silentLogger, { now: () => now, flushMs: 1e9, compactMs: 0 });
    const s = sessionOf(store, 'acme', 'alice');
    h.add(s.id, 'local', 100, 1000);
    h.add(s.id, 'local', 1, 10);
    h.add(s.id, 'sao-1', 5, 50);
    h.add(s.id, 'local', 0, 0); // nothing
    assert.equal(h.pendingCount, 2);
    now += MINUTE;
    h.add(s.id, 'local', 7, 70);
    h.add(randomUUID(), 'local', 9, 9); // a session the store does not know: dropped at write
    await h.flush();
    assert.equal(h.pendingCount, 0);
    assert.deepEqual(store.usageRowCounts(), { minute: 3, hour: 0, day: 0 });
    const minutes = store.usageBuckets(all(s.customerId, { stepMs: MINUTE, from: T0, to: T0 + 10 * MINUTE }));
    assert.deepEqual(minutes.map((r) => ({ ...r })), [
      { start: T0, uploaded_bytes: 106, downloaded_bytes: 1060 },
      { start: T0 + MINUTE, uploaded_bytes: 7, downloaded_bytes: 70 },
    ]);
    assert.deepEqual(total(store.usageBuckets(all(s.customerId, { node: 'sao-1' }))), { up: 5, down: 50 });
    // a second write into the same minute adds to the row
    h.add(s.id, 'local', 3, 30);
    await h.flush();
    assert.deepEqual(total(store.usageBuckets(all(s.customerId))), { up: 116, down: 1160 });
    await h.close();
  });
});

test('a failed write is kept and written once on the next flush', async () => {
  await withStore(async (store) => {
    const data = sqliteControlStore(store);
    let failures = 1;
    const flaky: UsageStore = {
      addUsage: (adds) => (failures-- > 0 ? Promise.reject(new Error('database away')) : data.addUsage(adds)),
      rollupUsage: data.rollupUsage,
      pruneUsage: data.pruneUsage,
    };
    const now = T0;
    const h = new UsageHistory(flaky, silentLogger, { now: () => now, flushMs: 1e9, compactMs: 0 });
    const s = sessionOf(store, 'acme', 'alice');
    h.add(s.id, 'local', 10, 100);
    await h.flush();
    assert.equal(h.pendingCount, 1, 'kept after the failure');
    assert.deepEqual(store.usageRowCounts(), { minute: 0, hour: 0, day: 0 });
    h.add(s.id, 'local', 1, 1);
    await h.flush();
    assert.equal(h.pendingCount, 0);
    assert.deepEqual(total(store.usageBuckets(all(s.customerId))), { up: 11, down: 101 });
    await h.close();
  });
});

test('three days of traffic compacted as they go: bounded rows, exact sums at every step', async () => {
  await withStore(async (store) => {
    let now = T0;
    const h = new UsageHistory(sqliteControlStore(store), silentLogger, { now: () => now, flushMs: 1e9, compactMs: 0 });
    const a = sessionOf(store, 'acme', 'alice');
    const b = sessionOf(store, 'acme', 'bob', 'nl-ams');
    const g = sessionOf(store, 'globex', 'alice');
    const added = { a: { up: 0, down: 0 }, b: { up: 0, down: 0 }, g: { up: 0, down: 0 } };
    let maxMinuteRows = 0;
    // every 30 s for 3 days: a always, b every other time, g now and then; compaction every 15 min
    for (let i = 0; i < 3 * 24 * 120; i++) {
      now = T0 + i * 30_000;
      h.add(a.id, 'local', 10, 100);
      added.a.up += 10;
      added.a.down += 100;
      if (i % 2) {
        h.add(b.id, i % 4 === 1 ? 'local' : 'sao-1', 3, 7);
        added.b.up += 3;
        added.b.down += 7;
      }
      if (i % 37 === 0) {
        h.add(g.id, 'local', 1000, 1);
        added.g.up += 1000;
        added.g.down += 1;
      }
      if (i % 20 === 0) await h.flush();
      if (i % 30 === 0) {
        await h.compact(50);
        maxMinuteRows = Math.max(maxMinuteRows, store.usageRowCounts().minute);
      }
    }
    await h.flush();
    await h.compact(50);
    // minute rows: at most a day and an hour (plus one compaction interval) of (session, node) pairs
    const perMinute = 4; // a, b on two nodes, g
    assert.ok(maxMinuteRows <= perMinute * (24 * 60 + 60 + 15), `minute rows peaked at ${maxMinuteRows}`);
    const n = store.usageRowCounts();
    assert.ok(n.minute <= perMinute * (24 * 60 + 60), JSON.stringify(n));
    assert.ok(n.hour > 0 && n.hour <= perMinute * 3 * 24, JSON.stringify(n));
    const acme = a.customerId;
    assert.deepEqual(total(store.usageBuckets(all(acme, { session_id: a.id }))), added.a);
    assert.deepEqual(total(store.usageBuckets(all(acme, { client_id: 'bob' }))), added.b);
    assert.deepEqual(total(store.usageBuckets(all(acme))), { up: added.a.up + added.b.up, down: added.a.down + added.b.down });
    assert.deepEqual(total(store.usageBuckets(all(g.customerId))), added.g);
    // hour buckets of the first day: 24 of them, each 120 additions of a and 60 of b
    const hours = store.usageBuckets(all(acme, { stepMs: HOUR, steps: ['minute', 'hour'], from: T0, to: T0 + DAY }));
    assert.equal(hours.length, 24);
    for (const r of hours) assert.deepEqual([r.uploaded_bytes, r.downloaded_bytes], [120 * 10 + 60 * 3, 120 * 100 + 60 * 7]);
    // top clients of the customer
    assert.deepEqual(store.usageTopClients(all(acme), 10).map((c) => c.client_id), ['alice', 'bob']);
    // 100 days on: days only; then past two years: nothing
    now += 100 * DAY;
    await h.compact(7);
    const later = store.usageRowCounts();
    assert.equal(later.minute + later.hour, 0);
    assert.ok(later.day <= perMinute * 4, JSON.stringify(later));
    assert.deepEqual(total(store.usageBuckets(all(acme))), { up: added.a.up + added.b.up, down: added.a.down + added.b.down });
    now += 800 * DAY;
    await h.compact();
    assert.deepEqual(store.usageRowCounts(), { minute: 0, hour: 0, day: 0 });
    await h.close();
  });
});
