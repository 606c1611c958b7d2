// The data plane's support memory (server/dataplane/support.ts): the refusal log keeps the last
// 100 per session and per client, newest first, counts every refusal per reason for an hour
// (a burst from one address within a second is listed once), and the Rate measures bytes a second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rate, RefusalLog, REFUSALS_KEPT } from '../../server/dataplane/support.ts';

test('the last 100 refusals per session and client, newest first; counts per reason for an hour', () => {
  let now = Date.parse('2026-11-27T10:00:00.000Z');
  const log = new RefusalLog(() => now);
  const subject = { sessionId: 's1', customerId: 'acme', clientId: 'bob' };
  for (let i = 0; i < 150; i++) {
    now += 1500; // never a burst
    log.record(subject, i % 2 ? 'paused' : 'max_sessions', 'tcp', `10.0.0.${i % 250}`);
  }
  const s = log.ofSession('s1');
  assert.equal(s.refusals.length, REFUSALS_KEPT);
  assert.equal(s.refusals[0].client_address, '10.0.0.149', 'newest first');
  assert.equal(s.refusals[99].client_address, '10.0.0.50', 'the oldest 50 dropped');
  assert.deepEqual(s.counts_last_hour, { paused: 75, max_sessions: 75 }, 'every refusal counted, not only those listed');
  assert.deepEqual(log.ofClient('acme', 'bob').refusals.map((r) => r.at), s.refusals.map((r) => r.at));
  assert.deepEqual(log.ofClient('other', 'bob'), { refusals: [], counts_last_hour: {} }, 'clients are per customer');
  // an hour later the counts are gone; the listed refusals stay until replaced
  now += 3_600_000 + 60_000;
  assert.deepEqual(log.ofSession('s1').counts_last_hour, {});
  assert.equal(log.ofSession('s1').refusals.length, REFUSALS_KEPT);
});

test('a burst of the same reason from one address is listed once and counted in full', () => {
  let now = 1_000_000;
  const log = new RefusalLog(() => now);
  for (let i = 0; i < 500; i++) {
    now += 1;
    log.record({ sessionId: 's2' }, 'connection_rate', 'ws', '192.0.2.1');
  }
  log.record({ sessionId: 's2' }, 'paused', 'ws', '192.0.2.1');
  const d = log.ofSession('s2');
  assert.deepEqual(d.refusals.map((r) => r.reason), ['paused', 'connection_rate']);
  assert.deepEqual(d.counts_last_hour, { connection_rate: 500, paused: 1 });
  assert.deepEqual(log.ofSession('unknown-id'), { refusals: [], counts_last_hour: {} });
});

test('Rate: bytes a second over the current and the previous second, 0 once idle', () => {
  const r = new Rate();
  for (let t = 10_000; t < 12_000; t += 100) r.add(50_000, t); // 500,000 B/s for two seconds
  const at = r.perSecond(11_950);
  assert.ok(at > 450_000 && at <= 520_000, String(at));
  assert.equal(r.perSecond(14_000), 0);
});
