// The app's quota warnings (renderer/src/lib/quota-words.ts), from the client record alone:
// nothing under 50 %, the percentage and the figures at 50 and 80 %, "all of" and until when at
// 100 %, the period's usage for renewing caps and the lifetime totals otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quotaAmount, quotaWarnings } from '../../renderer/src/lib/quota-words.ts';

const GB = 1024 ** 3;
const client = (down: number, up = 0, limits: Record<string, unknown> = { downloaded_bytes: 10 * GB, reset_period: 'month' }) => ({
  client_id: 'alice',
  limits,
  period: limits.reset_period ? { start: '2026-11-01T00:00:00.000Z', end: '2026-12-01T00:00:00.000Z', downloaded_bytes: down, uploaded_bytes: up } : null,
  downloaded_bytes: down + 50 * GB,
  uploaded_bytes: up,
});

test('quota warnings at 50, 80 and 100 % of the caps in force', () => {
  assert.deepEqual(quotaWarnings(client(4 * GB)), []);
  assert.deepEqual(quotaWarnings(client(8 * GB)), [{ direction: 'download', threshold: 80, percent: 80, text: 'alice has used 80 % of the monthly download cap (8.0 GB of 10 GB).' }]);
  assert.equal(quotaWarnings(client(5.5 * GB))[0]!.threshold, 50);
  const full = quotaWarnings({ ...client(10 * GB + 5), over_quota_until: '2026-12-01T00:00:00.000Z' })[0]!;
  assert.equal(full.threshold, 100);
  assert.match(full.text, /^alice has used all of the monthly download cap \(10\.0 GB of 10 GB\): new connections are refused until /);
  // Lifetime caps count the lifetime totals; upload apart.
  const life = quotaWarnings(client(0, 900, { uploaded_bytes: 1000 }));
  assert.deepEqual(life.map((w) => [w.direction, w.threshold, w.text]), [['upload', 80, 'alice has used 90 % of the upload cap (900 B of 1000 B).']]);
  assert.deepEqual(quotaWarnings(client(10, 0, { downloaded_bytes: 0 })), [], 'a cap of 0 has no thresholds');
  assert.equal(quotaAmount(1536), '1.5 KB');
});
