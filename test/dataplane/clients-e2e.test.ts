// Clients with real traffic through serve's own VLESS data plane (raw VLESS over TCP to a
// loopback echo): a client's override cap cuts its transfer while the template lets another
// client move more; disabling a client cuts its live transfer at once and refuses it until it is
// enabled; a client's expires_at cuts it at that time; reset-usage lets an over-quota client
// through again; an override's speed limit and max_sessions hold for that client only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openVlessEcho, pushThroughEcho, startTcpEcho } from './helpers/targets.ts';

let srv: RunningServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let dir: string;
let owner: string;

before(async () => {
  dir = tempDir('vad-clients-');
  srv = await startServer({ dataDir: dir, port: 0, proxyPort: null, egress: 'allow-all', statsIntervalMs: 200, rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = srv.ownerToken!;
  echo = await startTcpEcho();
});
after(async () => {
  await srv?.close();
  await echo?.close();
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
