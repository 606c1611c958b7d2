// renderer/src/lib/usage.ts: the chart ranges and the queries they send, round byte ticks, the
// busiest bucket. Pure functions, so plain values in and out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_USAGE_BUCKETS } from '../../server/contract/usage.ts';
import { busiest, chartPoints, niceTicks, RANGES, usageQuery } from '../../renderer/src/lib/usage.ts';

const STEP_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

test('every range asks for a step the server keeps for all of it, within its bucket cap', () => {
  const now = Date.parse('2026-11-22T10:47:13.500Z');
  for (const r of RANGES) {
    const q = usageQuery({ session_id: 's1' }, r.key, now);
    assert.equal(q.session_id, 's1');
    assert.equal(q.to, new Date(now).toISOString());
    assert.equal(Date.parse(q.to!) - Date.parse(q.from!), r.ms);
    const ms = STEP_MS[q.step!];
    const buckets = Math.ceil(Date.parse(q.to!) / ms) - Math.floor(Date.parse(q.from!) / ms);
    assert.ok(buckets <= MAX_USAGE_BUCKETS, `${r.key}: ${buckets} buckets`);
    // Minute buckets are kept for a day, hour buckets for 90 days.
    if (q.step === 'minute') assert.ok(r.ms <= STEP_MS.day);
    if (q.step === 'hour') assert.ok(r.ms <= 90 * STEP_MS.day);
    // Read again within 15 s up to a day; never less often than its own bucket fills.
    assert.ok(r.ms > STEP_MS.day || r.refreshMs <= 15_000, `${r.key} refreshes every ${r.refreshMs} ms`);
    assert.ok(r.refreshMs <= ms, `${r.key}: a refresh every ${r.refreshMs} ms misses buckets of ${ms} ms`);
  }
  assert.deepEqual(usageQuery({ client_id: 'alice' }, '1h', now).step, 'minute');
  assert.deepEqual(Object.keys(usageQuery({}, '90d', now)).sort(), ['from', 'step', 'to']);
});

test('ticks are round numbers of the unit and reach the largest value', () => {
  const MiB = 1024 * 1024;
  assert.deepEqual(niceTicks(3 * MiB), [0, MiB, 2 * MiB, 3 * MiB]);
  assert.deepEqual(niceTicks(3.05 * MiB), [0, MiB, 2 * MiB, 3 * MiB, 4 * MiB]);
  assert.deepEqual(niceTicks(700), [0, 200, 400, 600, 800]);
  assert.deepEqual(niceTicks(4 * MiB + 300), [0, MiB, 2 * MiB, 3 * MiB, 4 * MiB, 5 * MiB]);
  assert.deepEqual(niceTicks(0), [0, 1024]);
  for (const max of [1, 5, 999, 1024, 1500, 9 * MiB, 123456789, 7.3 * 1024 ** 3]) {
    const t = niceTicks(max);
    assert.equal(t[0], 0);
    assert.ok(t.at(-1)! >= max, `${max}: ${t}`);
    assert.ok(t.length >= 2 && t.length <= 6, `${max}: ${t.length} ticks`);
    const steps = new Set(t.slice(1).map((v, i) => v - t[i]!));
    assert.equal(steps.size, 1, `${max}: even steps ${[...steps]}`);
  }
});

test('the busiest bucket counts both directions; none when nothing moved', () => {
  const report = {
    from: '2026-11-22T10:00:00.000Z',
    to: '2026-11-22T10:03:00.000Z',
    step: 'minute' as const,
    totals: { uploaded_bytes: 30, downloaded_bytes: 20 },
    buckets: [
      { start: '2026-11-22T10:00:00.000Z', uploaded_bytes: 0, downloaded_bytes: 20 },
      { start: '2026-11-22T10:01:00.000Z', uploaded_bytes: 30, downloaded_bytes: 0 },
      { start: '2026-11-22T10:02:00.000Z', uploaded_bytes: 0, downloaded_bytes: 0 },
    ],
  };
  const points = chartPoints(report);
  assert.deepEqual(points[1], { t: Date.parse('2026-11-22T10:01:00.000Z'), up: 30, down: 0 });
  assert.equal(busiest(points)?.t, points[1]!.t);
  assert.equal(busiest(points.map((p) => ({ ...p, up: 0, down: 0 }))), null);
});
