// The clients screens without the screens: the badges and link reasons in words
// (renderer/src/lib/standing.ts), the usage against the cap in force, and the IPC
// operations of the clients and devices API checking their arguments in main.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OP_NAMES, registerIpc, type Handlers } from '../../main/ipc.ts';
import type { Client } from '../../common/client-types.ts';
import { clientBadges, clientUsage, lastSeenWords, linkBlock, sessionBadges } from '../../renderer/src/lib/standing.ts';

const NOW = Date.parse('2026-06-10T12:00:00Z');
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const client = (over: Partial<Client> = {}): Client => ({
  client_id: 'alice',
  status: 'idle',
  sessions: 1,
  uploaded_bytes: 10,
  downloaded_bytes: 900,
  period: null,
  limits: {},
  limit_sources: {},
  disabled: false,
  expires_at: null,
  last_seen: null,
  ...over,
});
const session = (over: Record<string, unknown> = {}) => ({ client_id: 'alice', status: 'idle', paused: false, ...over });
const keys = (b: { key: string }[]) => b.map((x) => x.key);

test('a refused session says why in its badges, not only its status', () => {
  assert.deepEqual(keys(sessionBadges(session(), undefined, NOW)), ['status']);
  const oq = sessionBadges(session({ over_quota: true, over_quota_until: iso(NOW + 5 * HOUR) }), undefined, NOW);
  assert.deepEqual(keys(oq), ['status', 'over-quota']);
  assert.match(oq[1]!.text, /^over quota until /);
  assert.equal(sessionBadges(session(), client({ status: 'over_quota' }), NOW)[1]!.text, 'over quota (rolling 30 days)');
  assert.deepEqual(keys(sessionBadges(session({ paused: true }), client({ disabled: true, status: 'disabled' }), NOW)), ['status', 'disabled', 'paused']);
  assert.deepEqual(keys(sessionBadges(session({ expires_at: iso(NOW + 3 * HOUR) }), undefined, NOW)), ['status', 'expires-soon']);
  assert.equal(sessionBadges(session({ expires_at: iso(NOW + 3 * HOUR) }), undefined, NOW)[1]!.text, 'expires in 3 hours');
  assert.deepEqual(keys(sessionBadges(session({ expires_at: iso(NOW + 48 * HOUR) }), undefined, NOW)), ['status'], 'two days away is not soon');
  assert.deepEqual(keys(sessionBadges(session({ status: 'ended', expires_at: iso(NOW - HOUR) }), client({ disabled: true }), NOW)), ['expired'], 'an ended session says only that');
  assert.deepEqual(keys(sessionBadges(session({ status: 'ended' }), undefined, NOW)), ['ended']);
});

test('a link that can carry no traffic: why, and whether copying it still makes sense', () => {
  assert.equal(linkBlock(session({ status: 'active' }), client(), NOW), null);
  for (const [s, c, final, words] of [
    [session({ status: 'ended' }), undefined, true, /has ended/],
    [session({ status: 'ended', expires_at: iso(NOW - HOUR) }), undefined, true, /expired/],
    [session(), client({ disabled: true, status: 'disabled' }), false, /is disabled/],
    [session(), client({ status: 'expired', expires_at: iso(NOW - HOUR) }), false, /expired/],
    [session({ over_quota: true }), undefined, false, /Over quota \(rolling 30 days\)/],
    [session({ paused: true }), undefined, false, /paused/],
  ] as const) {
    const b = linkBlock(s, c, NOW);
    assert.ok(b, String(words));
    assert.equal(b.final, final, String(words));
    assert.match(b.reason, words);
  }
});

test('the usage bar: the cap nearest to being reached, over the period when it renews', () => {
  assert.equal(clientUsage(client()), null, 'no cap, no bar');
  const u = clientUsage(client({ limits: { downloaded_bytes: 3600, uploaded_bytes: 20 } }))!;
  assert.equal(u.direction, 'upload');
  assert.equal(u.fraction, 0.5);
  const p = clientUsage(client({ limits: { downloaded_bytes: 1000 }, period: { start: iso(NOW - HOUR), end: null, uploaded_bytes: 0, downloaded_bytes: 2500 } }))!;
  assert.equal(p.fraction, 1, 'capped at full');
  assert.match(p.words, /downloaded this period$/);
  assert.deepEqual(keys(clientBadges(client({ status: 'over_quota', over_quota_until: iso(NOW + HOUR) }), NOW)), ['over-quota']);
  assert.deepEqual(keys(clientBadges(client({ expires_at: iso(NOW + HOUR) }), NOW)), ['status', 'expires-soon']);
  assert.equal(lastSeenWords(iso(NOW - 5 * 60_000), false, NOW), 'seen 5 minutes ago');
  assert.equal(lastSeenWords(null, false, NOW), 'never seen');
  assert.equal(lastSeenWords(null, true, NOW), 'connected now');
});

test('IPC: the clients and devices operations check their arguments before any handler runs', async () => {
  const channels = new Map<string, (event: unknown, ...args: unknown[]) => Promise<unknown>>();
  const calls: string[] = [];
  const handlers = Object.fromEntries(OP_NAMES.map((n) => [n, async (...args: unknown[]) => (calls.push(n), { ok: true, value: args })])) as unknown as Handlers;
  registerIpc({ handle: (c, l) => void channels.set(c, l as never), removeHandler: (c) => void channels.delete(c) }, handlers, () => true);
  const call = (name: string, ...args: unknown[]) => channels.get(`app:${name}`)!({ senderFrame: {} }, ...args) as Promise<{ ok: boolean; error?: { code: string } }>;
  const good: Array<[string, ...unknown[]]> = [
    ['listClients', {}],
    ['listClients', { status: 'over_quota' }],
    ['listClients', { client_id: ['alice', 'bob@example.com'] }],
    ['getClient', 'alice@example.com'],
    ['updateClient', 'alice', { disabled: true }],
    ['updateClient', 'alice', { expires_at: '2026-07-01T00:00:00.000Z' }],
    ['updateClient', 'alice', { expires_at: null }],
    ['getClientLimits', 'alice'],
    ['updateClientLimits', 'alice', { downloaded_bytes: 1024, max_devices: null, reset_period: 'day' }],
    ['deleteClientLimits', 'alice'],
    ['resetClientUsage', 'alice'],
    ['listDevices', 'alice'],
    ['deleteDevice', 'alice', 'hw-1'],
  ];
  for (const [name, ...args] of good) assert.equal((await call(name, ...args)).ok, true, `${name} ${JSON.stringify(args)}`);
  const bad: Array<[string, ...unknown[]]> = [
    ['listClients', { status: 'sleeping' }],
    ['listClients', { colour: 'red' }],
    ['listClients', { client_id: 'alice' }],
    ['listClients', { client_id: [] }],
    ['listClients', { client_id: ['has spaces'] }],
    ['listClients', { client_id: Array.from({ length: 101 }, (_, i) => `c${i}`) }],
    ['listClients'],
    ['getClient', 'has spaces'],
    ['getClient', 'alice', 'extra'],
    ['updateClient', 'alice', {}],
    ['updateClient', 'alice', { disabled: 'yes' }],
    ['updateClient', 'alice', { disabled: true, owner: 'mallory' }],
    ['updateClient', '../x', { disabled: true }],
    ['updateClientLimits', 'alice', { downloaded_bytes: '1 GB' }],
    ['updateClientLimits', 'alice', { colour: 1 }],
    ['updateClientLimits', 'alice', {}],
    ['updateClientLimits', 'alice', [1]],
    ['resetClientUsage', ''],
    ['deleteDevice', 'alice'],
    ['deleteDevice', 'alice', ''],
    ['deleteDevice', 'alice', 'x'.repeat(300)],
  ];
  for (const [name, ...args] of bad) {
    const r = await call(name, ...args);
    assert.equal(r.ok, false, `${name} ${JSON.stringify(args).slice(0, 60)}`);
    assert.equal(r.error?.code, 'invalid_request');
  }
  assert.equal(calls.length, good.length, 'no refused call reached a handler');
});
