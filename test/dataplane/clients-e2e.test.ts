// Clients with real traffic through serve's own VLESS data plane (raw VLESS over TCP to a
// loopback echo): a client's override cap cuts its transfer while the template lets another
// client move more; disabling a client cuts its live transfer at once and refuses it until it is
// enabled; a client's expires_at cuts it at that time; reset-usage lets an over-quota client
// through again; an override's speed limit and max_sessions hold for that client only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openVlessEcho, pushThroughEcho, startTcpEcho } from './helpers/targets.ts';

let srv: RunningServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let dir: string;
let owner: string;
let receiver: Server;
const hooks: Array<{ type: string; data: Record<string, unknown> }> = [];

before(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      hooks.push(JSON.parse(body) as { type: string; data: Record<string, unknown> });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  dir = tempDir('vad-clients-');
  srv = await startServer({
    dataDir: dir, port: 0, proxyPort: null, egress: 'allow-all', statsIntervalMs: 200, rateLimit: { max: 100_000, windowMs: 60_000 },
    webhooks: { pollMs: 50, baseDelayMs: 100, maxDelayMs: 400, timeoutMs: 3000, key: randomBytes(32) },
  });
  owner = srv.ownerToken!;
  echo = await startTcpEcho();
});
after(async () => {
  await srv?.close();
  await echo?.close();
  await new Promise<void>((r) => receiver.close(() => r()));
  if (dir) removeDir(dir);
});

const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
const session = async (clientId: string) => {
  const r = await call('POST', '/sessions', { client_id: clientId, zone: 'de-fra', reusable: true });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.id as string;
};
const push = (id: string, n: number) => pushThroughEcho(srv.vlessTcpPort!, id, echo.port, n);

test('an override cap cuts its client while the template lets another client move more', async () => {
  assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: 5_000_000 })).status, 200);
  assert.equal((await call('PATCH', '/clients/ov-small/limits', { downloaded_bytes: 200_000 })).status, 200);
  const small = await session('ov-small');
  const plain = await session('ov-plain');
  const cut = await push(small, 600_000);
  assert.ok(cut < 400_000, `the override cut the transfer (${cut} bytes came back)`);
  const full = await push(plain, 600_000);
  assert.ok(full > 590_000, `the template lets the other client through (${full})`);
  await waitFor(async () => (await call('GET', '/clients/ov-small')).json.status === 'over_quota', 5000, 'ov-small over quota');
  const c = (await call('GET', '/clients/ov-small')).json;
  assert.equal(c.limit_sources.downloaded_bytes, 'override');
  assert.ok(c.downloaded_bytes < 200_000 + 64 * 1024, `at most a chunk over the cap (${c.downloaded_bytes})`);
  assert.equal(await push(small, 50_000), 0, 'refused while over');

  // reset-usage: counted from now, the same session moves again (up to the cap once more).
  const reset = await call('POST', '/clients/ov-small/reset-usage');
  assert.equal(reset.status, 200, JSON.stringify(reset.json));
  assert.equal(reset.json.status, 'idle');
  const again = await push(small, 100_000);
  assert.ok(again > 90_000, `let through again after the reset (${again})`);
  const over = await push(small, 400_000);
  assert.ok(over < 250_000, `and cut again at the cap counted from the reset (${over})`);

  // The override removed: the template's 5 MB applies again to the same client.
  assert.equal((await call('DELETE', '/clients/ov-small/limits')).status, 204);
  assert.ok((await push(small, 100_000)) > 90_000, 'the template applies again');
  assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);
});

test('disabling a client cuts its live transfer at once and refuses it; enabling lets it in again', async () => {
  const a = await session('dis-me');
  const b = await session('dis-me');
  const other = await session('dis-other');
  const liveA = await openVlessEcho(srv.vlessTcpPort!, a, echo.port);
  const liveB = await openVlessEcho(srv.vlessTcpPort!, b, echo.port);
  const liveOther = await openVlessEcho(srv.vlessTcpPort!, other, echo.port);
  assert.ok(liveA.got() >= 4 && liveB.got() >= 4 && liveOther.got() >= 4, 'all three relay');
  const t0 = performance.now();
  const off = await call('PATCH', '/clients/dis-me', { disabled: true });
  assert.equal(off.status, 200, JSON.stringify(off.json));
  await Promise.race([Promise.all([liveA.closed, liveB.closed]), new Promise((_r, j) => setTimeout(() => j(new Error('not cut within 2 s')), 2000))]);
  assert.ok(performance.now() - t0 < 2000);
  assert.ok(!liveOther.s.destroyed, 'another client keeps its connection');
  liveOther.s.destroy();
  assert.equal(await push(a, 50_000), 0, 'refused while disabled');
  assert.equal((await call('POST', '/sessions', { client_id: 'dis-me', zone: 'de-fra' })).status, 422);
  assert.equal((await call('GET', `/sessions/${a}`)).json.status !== 'ended', true, 'its sessions are not ended');
  assert.equal((await call('PATCH', '/clients/dis-me', { disabled: false })).status, 200);
  assert.ok((await push(a, 50_000)) > 40_000, 'enabled: the same session relays again');
});

test('a client\'s expires_at cuts its live connection at that time and refuses it after', async () => {
  const id = await session('exp-me');
  const live = await openVlessEcho(srv.vlessTcpPort!, id, echo.port);
  assert.ok(live.got() >= 4);
  const at = Date.now() + 1500;
  assert.equal((await call('PATCH', '/clients/exp-me', { expires_at: new Date(at).toISOString() })).status, 200);
  await live.closed;
  const cutAt = Date.now();
  assert.ok(cutAt >= at - 50 && cutAt < at + 2500, `cut at its expiry (${cutAt - at} ms after)`);
  assert.equal(await push(id, 50_000), 0, 'refused after its expiry');
  assert.equal((await call('GET', '/clients/exp-me')).json.status, 'expired');
});

test('an override\'s speed limit and max_sessions hold for its client only', async () => {
  assert.equal((await call('PATCH', '/clients/slow/limits', { download_speed: 100_000, max_sessions: 1 })).status, 200);
  const one = await session('slow');
  const two = await session('slow');
  const first = await openVlessEcho(srv.vlessTcpPort!, one, echo.port);
  assert.ok(first.got() >= 4);
  assert.equal(await push(two, 50_000), 0, 'a second session of the client is refused (max_sessions 1)');
  first.s.destroy();
  await first.closed;
  // 300 kB pushed in about 0.1 s, then 1.5 s to drain: shaped to 100 kB/s, the client gets far less back.
  const shaped = await push(one, 300_000);
  assert.ok(shaped > 50_000 && shaped < 240_000, `shaped to about 100 kB/s (${shaped} bytes in about 1.6 s)`);
  const free = await push(await session('not-slow'), 300_000);
  assert.ok(free > 290_000, `another client is not shaped (${free})`);
});

test('an override\'s max_reconnections holds for its client while the template allows more', async () => {
  assert.equal((await call('PATCH', '/customer/limits/client', { max_reconnections: 5 })).status, 200);
  assert.equal((await call('PATCH', '/clients/once/limits', { max_reconnections: 0 })).status, 200);
  const id = await session('once');
  const other = await session('twice');
  assert.ok((await push(id, 20_000)) > 0, 'the first connection relays');
  assert.equal(await push(id, 20_000), 0, 'no reconnection for this client');
  assert.ok((await push(other, 20_000)) > 0);
  assert.ok((await push(other, 20_000)) > 0, 'the template lets another client reconnect');
  assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);
});

test('webhooks for client changes; a session\'s status and the subscription header count by the override', async () => {
  const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  assert.equal((await call('POST', '/webhooks', { url, events: ['client_changed', 'limits_changed'] })).status, 201);
  const id = await session('hooked');
  assert.equal((await call('PATCH', '/clients/hooked/limits', { downloaded_bytes: 100_000, reset_period: 'day' })).status, 200);
  assert.equal((await call('PATCH', '/clients/hooked', { disabled: true })).status, 200);
  assert.equal((await call('PATCH', '/clients/hooked', { disabled: false })).status, 200);
  const cut = await push(id, 400_000);
  assert.ok(cut < 250_000, `cut by the daily override (${cut})`);
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.over_quota === true, 5000, 'the session over quota by its client\'s override');
  const status = (await call('GET', `/sessions/${id}/status`)).json;
  assert.equal(status.over_quota_until, (await call('GET', '/clients/hooked')).json.over_quota_until);
  const sub = await call('PUT', '/subscriptions/hooked');
  const feed = await fetch(sub.json.url, { headers: { 'user-agent': 'v2rayNG/1.9.30' } });
  assert.match(feed.headers.get('subscription-userinfo') ?? '', /; total=100000(;|$)/, 'the subscription names the override cap');
  assert.equal((await call('POST', '/clients/hooked/reset-usage')).status, 200);
  assert.equal((await call('GET', `/sessions/${id}/status`)).json.over_quota, undefined, 'not over after the reset');
  assert.equal((await call('DELETE', '/clients/hooked/limits')).status, 204);

  await waitFor(() => hooks.filter((h) => h.type === 'client_changed').length >= 3 && hooks.filter((h) => h.type === 'limits_changed').length >= 2, 10_000, 'the webhooks');
  const changed = hooks.filter((h) => h.type === 'client_changed').map((h) => h.data);
  assert.deepEqual(changed.slice(0, 2), [
    { client_id: 'hooked', action: 'updated', disabled: true, expires_at: null },
    { client_id: 'hooked', action: 'updated', disabled: false, expires_at: null },
  ]);
  assert.equal(changed[2].action, 'usage_reset');
  const limits = hooks.filter((h) => h.type === 'limits_changed').map((h) => h.data);
  assert.equal(limits[0].scope, 'client');
  assert.equal(limits[0].client_id, 'hooked');
  assert.equal(limits[0].action, 'updated');
  assert.deepEqual({ ...(limits[0].limits as object), id: 0, created_at: 0, updated_at: 0 }, { id: 0, created_at: 0, updated_at: 0, downloaded_bytes: 100_000, reset_period: 'day' });
  assert.deepEqual({ ...limits[1], limits: limits[1].limits }, { scope: 'client', client_id: 'hooked', action: 'deleted', limits: null });
});
