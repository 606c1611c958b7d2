// The usage history writer and compaction (server/usage/history.ts) on a real SQLite store, with
// an injected clock: additions accumulate per (session, node, minute) and are written in one
// batch; a failed write is kept and written once later (no byte lost, none twice). Three
// simulated days compacted as they go run on both databases in test/store/repo-usage.test.ts.
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
