// Settings → Webhooks: what the card says of an endpoint's health (renderer/src/lib/webhook-state.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { webhookState } from '../../renderer/src/lib/webhook-state.ts';

const healthy = { enabled: true, disabled_reason: null, disabled_at: null, failing_since: null, consecutive_failures: 0, dropped: 0 };

test('healthy, failing, turned off, disabled by the server, and dropped deliveries', () => {
  assert.deepEqual(webhookState(healthy), { badge: 'ok', label: 'ok', detail: null, dropped: null });

  const failing = webhookState({ ...healthy, consecutive_failures: 7, failing_since: '2026-01-02T03:04:05.000Z' });
  assert.equal(failing.badge, 'failing');
  assert.match(failing.detail!, /^Failing since .+: 7 attempts in a row\.$/);

  assert.deepEqual(webhookState({ ...healthy, enabled: false }), { badge: 'off', label: 'off', detail: null, dropped: null });

  const disabled = webhookState({
    ...healthy,
    enabled: false,
    consecutive_failures: 50,
    failing_since: '2026-01-02T03:04:05.000Z',
    disabled_reason: '50 delivery attempts failed in a row',
    disabled_at: '2026-01-02T05:00:00.000Z',
    dropped: 1,
  });
  assert.equal(disabled.badge, 'disabled');
  assert.equal(disabled.label, 'disabled by the server');
  assert.match(disabled.detail!, /^Disabled on .+: 50 delivery attempts failed in a row\. Fix the receiver, then enable it again\.$/);
  assert.equal(disabled.dropped, '1 pending delivery was dropped (too many were waiting).');
  assert.equal(webhookState({ ...healthy, dropped: 15 }).dropped, '15 pending deliveries were dropped (too many were waiting).');
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
