// Usage thresholds with real traffic through the VLESS data plane and a local webhook receiver:
// a daily client download cap is crossed at 50, 80 and 100 %, each sent once (signed, with the
// figures and the period); a restart of the server on the same data folder sends none of them
// again; the next day (an injected wall clock) they are sent again for the new period. Lifetime
// session and global caps send their thresholds without a period. On PostgreSQL, two instances
// carrying the same client's traffic send each threshold exactly once. A client's usage reset or
// a changed cap lets the thresholds be sent again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { startServer, type StartOptions } from '../../server/serve.ts';
import { setWallClock } from '../../server/time.ts';
import { verifySignature } from '../../server/webhooks/secret.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { pushThroughEcho, startTcpEcho } from './helpers/targets.ts';

const DAY = 86_400_000;
type Payload = { scope: string; session_id?: string; client_id?: string; direction: string; threshold: number; used_bytes: number; cap_bytes: number; period_start?: string; period_end?: string };
type Got = { type: string; data: Payload; signature: string; body: string };

let receiver: Server;
let url: string;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
const got: Got[] = [];
let shift = 0;
const KEY = randomBytes(32);

before(async () => {
  setWallClock(() => Date.now() + shift);
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const json = JSON.parse(body) as { type: string; data: Payload };
      got.push({ type: json.type, data: json.data, signature: String(req.headers['x-vad-signature']), body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  echo = await startTcpEcho();
});
after(async () => {
  setWallClock();
  await echo?.close();
  await new Promise<void>((r) => receiver.close(() => r()));
});

const options = (dataDir: string, extra: Partial<StartOptions> = {}): StartOptions => ({
  dataDir,
  port: 0,
  vlessTcpPort: 0,
  proxyPort: null,
  egress: 'allow-all',
  statsIntervalMs: 200,
  thresholdsEveryMs: 100,
  rateLimit: { max: 100_000, windowMs: 60_000 },
  webhooks: { pollMs: 50, baseDelayMs: 100, maxDelayMs: 400, timeoutMs: 3000, key: KEY },
  ...extra,
});

const of = (pred: (p: Payload) => boolean) => got.filter((g) => g.type === 'usage_threshold' && pred(g.data));
const settle = () => new Promise((r) => setTimeout(r, 1200));

test('a daily client cap: 50, 80 and 100 % once each, none again after a restart, again the next day', async () => {
  const dir = tempDir('vad-thresh-');
  let srv = await startServer(options(dir));
  try {
    const owner = srv.ownerToken!;
    const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
    const hook = await call('POST', '/webhooks', { url, events: ['usage_threshold'] });
    assert.equal(hook.status, 201, JSON.stringify(hook.json));
    const secret: string = hook.json.secret;
    assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: 1_000_000, reset_period: 'day' })).status, 200);
    const id: string = (await call('POST', '/sessions', { client_id: 'alice', zone: 'de-fra', reusable: true })).json.id;
    const alice = (threshold: number) => of((p) => p.scope === 'client' && p.client_id === 'alice' && p.threshold === threshold);

    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 560_000);
    await waitFor(() => alice(50).length > 0, 10_000, 'the 50 % webhook');
    const day = Math.floor((Date.now() + shift) / DAY) * DAY;
    const fifty = alice(50)[0]!;
    assert.equal(fifty.data.direction, 'download');
    assert.equal(fifty.data.cap_bytes, 1_000_000);
    assert.ok(fifty.data.used_bytes >= 500_000 && fifty.data.used_bytes < 800_000, JSON.stringify(fifty.data));
    assert.equal(fifty.data.period_start, new Date(day).toISOString());
    assert.equal(fifty.data.period_end, new Date(day + DAY).toISOString());
    assert.equal(fifty.data.session_id, undefined, 'a client threshold names the client, not a session');
    assert.ok(verifySignature(secret, fifty.signature, fifty.body, Math.floor(Date.now() / 1000)));
    assert.equal(alice(80).length, 0);

    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 300_000);
    await waitFor(() => alice(80).length > 0, 10_000, 'the 80 % webhook');
    assert.equal(alice(100).length, 0);

    // A restart on the same folder: the thresholds already sent are not sent again.
    await srv.close();
    srv = await startServer(options(dir));
    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 48_000);
    await settle();
    assert.equal(alice(50).length, 1, 'not again after the restart');
    assert.equal(alice(80).length, 1, 'not again after the restart');

    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 400_000);
    await waitFor(() => alice(100).length > 0, 10_000, 'the 100 % webhook');
    await settle();
    assert.deepEqual([alice(50).length, alice(80).length, alice(100).length], [1, 1, 1], 'each threshold once');
    assert.equal(of((p) => p.direction === 'upload').length, 0, 'no upload cap, no upload thresholds');

    // The next day: the same thresholds of the new period.
    shift += day + DAY - (Date.now() + shift) + 1000;
    // The quota job records the new day's base within a second: the day counts from there.
    const customerId = (await srv.services.tokenLookup.find(owner))!.customer_id;
    await waitFor(async () => (await srv.services.data.quotaBase(customerId, 'client', 'alice', day + DAY)) !== undefined, 5000, 'the new day\'s base');
    await waitFor(async () => (await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 560_000)) > 500_000, 10_000, 'served again the next day');
    await waitFor(() => alice(50).length === 2, 10_000, 'the 50 % webhook of the next day');
    assert.equal(alice(50)[1]!.data.period_start, new Date(day + DAY).toISOString());
    assert.equal(alice(80).length, 1);
    assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);
  } finally {
    await srv.close();
    removeDir(dir);
  }
});

test('lifetime session and global caps: thresholds of the session and of the customer, without a period', async () => {
  const dir = tempDir('vad-thresh-s-');
  const srv = await startServer(options(dir));
  try {
    const owner = srv.ownerToken!;
    const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
    assert.equal((await call('POST', '/webhooks', { url, events: ['usage_threshold'] })).status, 201);
    assert.equal((await call('PATCH', '/customer/limits/session', { uploaded_bytes: 400_000 })).status, 200);
    assert.equal((await call('PATCH', '/customer/limits/global', { uploaded_bytes: 600_000 })).status, 200);
    const id: string = (await call('POST', '/sessions', { client_id: 'bob', zone: 'de-fra', reusable: true })).json.id;
    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 340_000);
    await waitFor(() => of((p) => p.session_id === id && p.threshold === 80).length > 0, 10_000, 'the session\'s 80 % webhook');
    const mine = of((p) => p.session_id === id);
    assert.deepEqual(mine.map((g) => g.data.threshold), [50, 80], 'in order, 100 not reached');
    assert.deepEqual({ ...mine[0]!.data, used_bytes: 0 }, { scope: 'session', session_id: id, client_id: 'bob', direction: 'upload', threshold: 50, used_bytes: 0, cap_bytes: 400_000 });
    // The customer's (global) cap: its thresholds name neither a session nor a client.
    await waitFor(() => of((p) => p.scope === 'global').length > 0, 10_000, 'the global 50 % webhook');
    assert.deepEqual(of((p) => p.scope === 'global').map((g) => ({ ...g.data, used_bytes: 0 })), [{ scope: 'global', direction: 'upload', threshold: 50, used_bytes: 0, cap_bytes: 600_000 }]);
  } finally {
    await srv.close();
    removeDir(dir);
  }
});

test('a lifetime client cap: a usage reset or a changed cap lets the thresholds be sent again', async () => {
  const dir = tempDir('vad-thresh-r-');
  const srv = await startServer(options(dir));
  try {
    const owner = srv.ownerToken!;
    const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
    assert.equal((await call('POST', '/webhooks', { url, events: ['usage_threshold'] })).status, 201);
    assert.equal((await call('PATCH', '/clients/erin/limits', { downloaded_bytes: 500_000 })).status, 200);
    const id: string = (await call('POST', '/sessions', { client_id: 'erin', zone: 'de-fra', reusable: true })).json.id;
    const erin = (threshold: number) => of((p) => p.scope === 'client' && p.client_id === 'erin' && p.threshold === threshold);
    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 290_000);
    await waitFor(() => erin(50).length === 1, 10_000, 'the 50 % webhook');
    assert.equal(erin(50)[0]!.data.period_start, undefined, 'a lifetime cap names no period');
    assert.equal((await call('POST', '/clients/erin/reset-usage')).status, 200);
    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 100_000);
    await settle();
    assert.equal(erin(50).length, 1, 'after the reset the client counts from zero: under 50 %');
    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 200_000);
    await waitFor(() => erin(50).length === 2, 10_000, 'the 50 % webhook again after the reset');
    assert.ok(erin(50)[1]!.data.used_bytes < 400_000, 'counted from the reset');
    // A lower cap: its thresholds are new ones.
    assert.equal((await call('PATCH', '/clients/erin/limits', { downloaded_bytes: 350_000 })).status, 200);
    await pushThroughEcho(srv.vlessTcpPort!, id, echo.port, 16_000);
    await waitFor(() => erin(80).length === 1, 10_000, 'the 80 % webhook of the lower cap');
    assert.equal(erin(80)[0]!.data.cap_bytes, 350_000);
  } finally {
    await srv.close();
    removeDir(dir);
  }
});

test('on PostgreSQL: two instances carrying one client\'s traffic send each threshold once', async (t) => {
  const pg = await startPostgres(t);
  const dbUrl = await pg.createDatabase('thresholds');
  const dirs = [tempDir('vad-thresh-pg1-'), tempDir('vad-thresh-pg2-')];
  const a = await startServer(options(dirs[0]!, { database: dbUrl }));
  const b = await startServer(options(dirs[1]!, { database: dbUrl }));
  try {
    const token = (await a.services.data.createToken('pg-thresholds', 'owner')).token;
    const call = (method: string, path: string, body?: unknown) => callApi(a.baseUrl, token, method, path, body);
    assert.equal((await call('POST', '/webhooks', { url, events: ['usage_threshold'] })).status, 201);
    assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: 1_000_000 })).status, 200);
    const s1: string = (await call('POST', '/sessions', { client_id: 'carol', zone: 'de-fra', reusable: true })).json.id;
    const s2: string = (await call('POST', '/sessions', { client_id: 'carol', zone: 'de-fra', reusable: true })).json.id;
    const carol = (threshold: number) => of((p) => p.client_id === 'carol' && p.threshold === threshold);
    // Each instance carries half; then each carries a little more, so both see the client past 50 %.
    await Promise.all([pushThroughEcho(a.vlessTcpPort!, s1, echo.port, 300_000), pushThroughEcho(b.vlessTcpPort!, s2, echo.port, 300_000)]);
    await waitFor(() => carol(50).length > 0, 10_000, 'the 50 % webhook');
    await Promise.all([pushThroughEcho(a.vlessTcpPort!, s1, echo.port, 32_000), pushThroughEcho(b.vlessTcpPort!, s2, echo.port, 32_000)]);
    await settle();
    assert.equal(carol(50).length, 1, 'once across two instances');
    assert.equal(carol(80).length, 0);
    // Both instances at once past 80 and 100 %.
    await Promise.all([pushThroughEcho(a.vlessTcpPort!, s1, echo.port, 250_000), pushThroughEcho(b.vlessTcpPort!, s2, echo.port, 250_000)]);
    await waitFor(() => carol(100).length > 0, 10_000, 'the 100 % webhook');
    await settle();
    assert.deepEqual([carol(50).length, carol(80).length, carol(100).length], [1, 1, 1]);
    assert.equal(carol(100)[0]!.data.period_start, undefined, 'a lifetime cap has no period');
    const customerId = (await a.services.tokenLookup.find(token))!.customer_id;
    assert.deepEqual(await b.services.data.thresholdsCrossed(customerId, 'client', 'carol', 'download', 'lifetime|cap:1000000|reset:0'), [50, 80, 100]);
  } finally {
    await a.close();
    await b.close();
    for (const d of dirs) removeDir(d);
  }
});
