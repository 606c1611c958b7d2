// Settings → Subscription page without the screen: the rules the card checks before sending
// (renderer/src/lib/subscription-settings.ts, the server's rules in words), the change it sends,
// and the IPC operations' argument checks in main.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OP_NAMES, registerIpc, type Handlers } from '../../main/ipc.ts';
import { changes, FIELDS, settingsProblems, valuesOf } from '../../renderer/src/lib/subscription-settings.ts';
import { keepTyped } from '../../renderer/src/lib/form-answer.ts';

const empty = { support_url: '', profile_web_page_url: '', announce: '' };

test('the card refuses what the server would, by field, in words', () => {
  assert.deepEqual(settingsProblems(empty), {}, 'empty fields are fine (they clear)');
  assert.deepEqual(settingsProblems({ support_url: 'https://t.me/help', profile_web_page_url: 'http://acme.example/', announce: 'Привет\nмир' }), {});
  for (const bad of ['t.me/help', 'ftp://acme.example/', 'javascript:alert(1)', 'https://', 'https://acme .example/', 'https:acme.example', `https://acme.example/${'a'.repeat(2048)}`]) {
    const p = settingsProblems({ ...empty, support_url: bad, profile_web_page_url: bad });
    assert.deepEqual(Object.keys(p).sort(), ['profile_web_page_url', 'support_url'], bad.slice(0, 40));
  }
  assert.deepEqual(settingsProblems({ ...empty, announce: '👋'.repeat(200) }), {}, '200 characters, counted as a person counts them');
  assert.match(settingsProblems({ ...empty, announce: 'x'.repeat(201) }).announce!, /Up to 200 characters \(now 201\)/);
  assert.match(settingsProblems({ ...empty, announce: 'ring \u0007' }).announce!, /Plain text only/);
});

test('the change sent: only what differs, trimmed, an emptied field as null', () => {
  const saved = valuesOf({ support_url: 'https://t.me/help', profile_web_page_url: null, announce: 'hello', updated_at: '2026-01-01T00:00:00.000Z' });
  assert.deepEqual(saved, { support_url: 'https://t.me/help', profile_web_page_url: '', announce: 'hello' });
  assert.deepEqual(changes(saved, saved), {});
  assert.deepEqual(changes({ ...saved, announce: '', profile_web_page_url: '  https://acme.example/ ' }, saved), { announce: null, profile_web_page_url: 'https://acme.example/' });
});

test("the server's answer fills the fields as sent; a field typed into since keeps its text", () => {
  const sent = { support_url: ' https://t.me/help ', profile_web_page_url: '', announce: 'old' };
  const fresh = { support_url: 'https://t.me/help', profile_web_page_url: '', announce: 'old' };
  // Nothing typed meanwhile: the server's values (trimmed) everywhere.
  assert.deepEqual(keepTyped(FIELDS, sent, sent, fresh), fresh);
  // The announcement typed while the save was on its way stays; so does a field emptied meanwhile.
  assert.deepEqual(keepTyped(FIELDS, { ...sent, announce: 'new text' }, sent, fresh), { ...fresh, announce: 'new text' });
  assert.deepEqual(keepTyped(FIELDS, { ...sent, support_url: '' }, sent, fresh), { ...fresh, support_url: '' });
  // The first load: whatever was typed before it keeps its text, the rest takes the server's.
  const empty = { support_url: '', profile_web_page_url: '', announce: '' };
  assert.deepEqual(keepTyped(FIELDS, { ...empty, announce: 'early' }, empty, fresh), { ...fresh, announce: 'early' });
});

test('IPC: the settings operations check their arguments before any handler runs', async () => {
  const channels = new Map<string, (event: unknown, ...args: unknown[]) => Promise<unknown>>();
  const calls: string[] = [];
  const handlers = Object.fromEntries(OP_NAMES.map((n) => [n, async (...args: unknown[]) => (calls.push(n), { ok: true, value: args })])) as unknown as Handlers;
  registerIpc({ handle: (c, l) => void channels.set(c, l as never), removeHandler: (c) => void channels.delete(c) }, handlers, () => true);
  const call = (name: string, ...args: unknown[]) => channels.get(`app:${name}`)!({ senderFrame: {} }, ...args) as Promise<{ ok: boolean; error?: { code: string } }>;
  assert.equal((await call('getSubscriptionSettings')).ok, true);
  assert.equal((await call('getSubscriptionSettings', 'x')).ok, false);
  assert.equal((await call('updateSubscriptionSettings', { support_url: 'https://t.me/help', announce: null })).ok, true);
  for (const bad of [[], [null], ['x'], [{ colour: 'red' }], [{ announce: 42 }], [{ announce: 'x'.repeat(5000) }], [{ announce: 'x' }, 'extra']]) {
    const r = await call('updateSubscriptionSettings', ...bad);
    assert.equal(r.ok, false, JSON.stringify(bad).slice(0, 60));
    assert.equal(r.error?.code, 'invalid_request');
  }
  assert.deepEqual(calls, ['getSubscriptionSettings', 'updateSubscriptionSettings']);
});
