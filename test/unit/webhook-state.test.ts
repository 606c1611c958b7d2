// Settings → Webhooks: what the card says of an endpoint's health, its deliveries and a test
// (renderer/src/lib/webhook-state.ts), and times in words (renderer/src/lib/when.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deliveryStatus, errorWords, testResultText, webhookState } from '../../renderer/src/lib/webhook-state.ts';
import { spanWords, timeAgo, timeUntil } from '../../renderer/src/lib/when.ts';

const healthy = { enabled: true, disabled_reason: null, disabled_at: null, failing_since: null, consecutive_failures: 0, dropped: 0 };
const NOW = Date.parse('2026-01-02T05:10:00.000Z');
const none = { lastError: null, nextRetry: null, dropped: null };

test('healthy, failing, turned off, disabled by the server, and dropped deliveries', () => {
  assert.deepEqual(webhookState(healthy, NOW), { badge: 'ok', label: 'OK', detail: null, ...none });

  const failing = webhookState({ ...healthy, consecutive_failures: 7, failing_since: '2026-01-02T05:00:00.000Z' }, NOW);
  assert.equal(failing.badge, 'failing');
  assert.equal(failing.label, 'Failing');
  assert.equal(failing.detail, 'Failing for 10 minutes: 7 attempts in a row.');
  assert.equal(webhookState({ ...healthy, consecutive_failures: 1, failing_since: '2026-01-02T05:09:59.000Z' }, NOW).detail, 'Failing: 1 attempt in a row.');

  assert.deepEqual(webhookState({ ...healthy, enabled: false }, NOW), { badge: 'off', label: 'Off', detail: null, ...none });

  const disabled = webhookState({
    ...healthy,
    enabled: false,
    consecutive_failures: 50,
    failing_since: '2026-01-02T03:04:05.000Z',
    disabled_reason: '50 delivery attempts failed in a row',
    disabled_at: '2026-01-02T05:00:00.000Z',
    dropped: 1,
  }, NOW);
  assert.equal(disabled.badge, 'disabled');
  assert.equal(disabled.label, 'Disabled');
  assert.equal(disabled.detail, 'Disabled by the server 10 minutes ago: 50 delivery attempts failed in a row. Fix the receiver, then enable it again.');
  assert.equal(disabled.dropped, '1 pending delivery was dropped (too many were waiting).');
  assert.equal(webhookState({ ...healthy, dropped: 15 }).dropped, '15 pending deliveries were dropped (too many were waiting).');
});

test('the last error and its time in words; the next retry only while it lies ahead', () => {
  const failing = { ...healthy, consecutive_failures: 2, failing_since: '2026-01-02T05:00:00.000Z', last_error: 'ECONNREFUSED: connection refused', last_error_at: '2026-01-02T05:09:30.000Z' };
  const ahead = webhookState({ ...failing, next_retry_at: '2026-01-02T05:10:40.000Z' }, NOW);
  assert.equal(ahead.lastError, 'Last error 30 seconds ago: connection refused');
  assert.equal(ahead.nextRetry, 'Next retry in 40 seconds');
  // A retry due in the past (the sender catching up) is not shown as a time.
  assert.equal(webhookState({ ...failing, next_retry_at: '2026-01-02T05:09:00.000Z' }, NOW).nextRetry, null);
  assert.equal(webhookState({ ...failing, next_retry_at: '2026-01-02T05:10:00.000Z' }, NOW).nextRetry, null, 'due right now: nothing ahead');
  // Kept after a success, while the endpoint is healthy.
  assert.equal(webhookState({ ...healthy, last_error: 'HTTP 500', last_error_at: '2026-01-01T05:10:00.000Z' }, NOW).lastError, 'Last error 1 day ago: HTTP 500');
  assert.equal(spanWords(1000), '1 second');
  assert.equal(spanWords(90 * 60_000), '2 hours');
  assert.equal(timeAgo('2026-01-02T05:09:58.000Z', NOW), 'just now');
  assert.equal(timeUntil('2026-01-02T05:09:58.000Z', NOW), null);
});

test('delivery statuses never read as a retry in the past', () => {
  const at = (iso: string) => ({ status: 'pending' as const, attempts: 1, next_attempt_at: iso });
  assert.equal(deliveryStatus(at('2026-01-02T05:12:00.000Z'), NOW), 'retry in 2 minutes');
  assert.equal(deliveryStatus(at('2026-01-02T05:00:00.000Z'), NOW), 'retrying now');
  assert.equal(deliveryStatus({ status: 'pending', attempts: 0, next_attempt_at: '2026-01-02T05:00:00.000Z' }, NOW), 'queued', 'never tried: waiting behind an earlier one');
  assert.equal(deliveryStatus({ status: 'delivered', attempts: 1, next_attempt_at: null }, NOW), 'delivered');
});

test('what Send test answered, in words', () => {
  assert.deepEqual(testResultText({ delivered: true, status_code: 200, error: null, duration_ms: 35 }), { ok: true, text: 'Delivered: 200 in 35 ms' });
  assert.deepEqual(testResultText({ delivered: false, status_code: null, error: 'ECONNREFUSED: connection refused', duration_ms: 2 }), { ok: false, text: 'Failed: connection refused' });
  assert.deepEqual(testResultText({ delivered: false, status_code: 500, error: 'HTTP 500', duration_ms: 9 }), { ok: false, text: 'Failed: HTTP 500 in 9 ms' });
  assert.equal(testResultText({ delivered: false, status_code: null, error: 'timed out after 10000 ms', duration_ms: 10000 }).text, 'Failed: timed out after 10000 ms');
  assert.equal(errorWords("destination refused by the server's egress policy"), "destination refused by the server's egress policy");
});

test('IPC: setWebhookEnabled takes an id and a boolean, nothing else', async () => {
  const { OP_NAMES, registerIpc } = await import('../../main/ipc.ts');
  const channels = new Map<string, (event: unknown, ...args: unknown[]) => Promise<{ ok: boolean; error?: { code: string } }>>();
  const calls: unknown[][] = [];
  const handlers = Object.fromEntries(OP_NAMES.map((n) => [n, async (...args: unknown[]) => (calls.push(args), { ok: true, value: true })]));
  registerIpc({ handle: (c, l) => void channels.set(c, l as never), removeHandler: (c) => void channels.delete(c) }, handlers as never, () => true);
  const call = (...args: unknown[]) => channels.get('app:setWebhookEnabled')!({ senderFrame: {} }, ...args);
  assert.equal((await call('3f1c0a2e-hook', true)).ok, true);
  assert.equal((await call('3f1c0a2e-hook', false)).ok, true);
  for (const bad of [[], ['id'], ['id', 'true'], ['', true], [42, true], ['id', true, 'extra'], ['x'.repeat(201), true]]) {
    const r = await call(...bad);
    assert.equal(r.ok, false, JSON.stringify(bad));
    assert.equal(r.error?.code, 'invalid_request');
  }
  assert.deepEqual(calls, [['3f1c0a2e-hook', true], ['3f1c0a2e-hook', false]]);
});

test('IPC: testWebhook takes one id, nothing else', async () => {
  const { OP_NAMES, registerIpc } = await import('../../main/ipc.ts');
  const channels = new Map<string, (event: unknown, ...args: unknown[]) => Promise<{ ok: boolean; error?: { code: string } }>>();
  const calls: unknown[][] = [];
  const handlers = Object.fromEntries(OP_NAMES.map((n) => [n, async (...args: unknown[]) => (calls.push(args), { ok: true, value: true })]));
  registerIpc({ handle: (c, l) => void channels.set(c, l as never), removeHandler: (c) => void channels.delete(c) }, handlers as never, () => true);
  const call = (...args: unknown[]) => channels.get('app:testWebhook')!({ senderFrame: {} }, ...args);
  assert.equal((await call('3f1c0a2e-hook')).ok, true);
  for (const bad of [[], [''], [42], ['id', 'extra'], ['x'.repeat(201)]]) assert.equal((await call(...bad)).error?.code, 'invalid_request', JSON.stringify(bad));
  assert.deepEqual(calls, [['3f1c0a2e-hook']]);
});
