// Periodic byte caps with real traffic through the VLESS data plane, and an injected
// wall clock (setWallClock) instead of a sleep of a day: a daily client cap cuts a transfer and
// refuses the client's sessions, the status says "over quota until" the next period, and when
// the period turns the SAME session is let in again by itself, without any call. A weekly
// session cap cuts without ending the session. Bad periods and anchors are 400. On PostgreSQL
// the same daily cap holds and renews. Plus the period arithmetic (days, weeks, months, rolling).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { setWallClock } from '../../server/time.ts';
import { periodOf } from '../../server/contract/period.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { pushThroughEcho, startTcpEcho } from './helpers/targets.ts';

const DAY = 86_400_000;
let srv: RunningServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let dir: string;
let owner: string;
/** How far the injected wall clock is ahead of the system's. */
let shift = 0;

before(async () => {
  setWallClock(() => Date.now() + shift);
  dir = tempDir('vad-quota-');
  srv = await startServer({ dataDir: dir, port: 0, egress: 'allow-all', statsIntervalMs: 300, rateLimit: { max: 100_000, windowMs: 60_000 }, usageHistory: { now: () => Date.now() + shift, flushMs: 200, compactMs: 0 } });
  owner = srv.ownerToken!;
  echo = await startTcpEcho();
});
after(async () => {
  setWallClock();
  await srv?.close();
  await echo?.close();
  if (dir) removeDir(dir);
});

const call = (method: string, path: string, body?: unknown, base = srv.baseUrl, token = owner) => callApi(base, token, method, path, body);

const pushThrough = (port: number, id: string, n: number) => pushThroughEcho(port, id, echo.port, n);

test('a daily client cap cuts and refuses; the status says until when; the same session is let in again when the day turns', async () => {
  const set = await call('PATCH', '/customer/limits/client', { downloaded_bytes: 300_000, reset_period: 'day' });
  assert.equal(set.status, 200, JSON.stringify(set.json));
  assert.equal(set.json.reset_period, 'day');
  // Another field changed later keeps the period (string fields survive a merge).
  assert.equal((await call('PATCH', '/customer/limits/client', { max_sessions: 5 })).json.reset_period, 'day');

  const made = await call('POST', '/sessions', { client_id: 'q-bob', zone: 'de-fra', reusable: true });
  const id: string = made.json.id;
  const got = await pushThrough(srv.vlessTcpPort!, id, 600_000);
  assert.ok(got < 600_000, `the transfer was cut (${got} bytes came back)`);
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.downloaded_bytes >= 300_000, 5000, 'the cap reached');
  const status = (await call('GET', `/sessions/${id}/status`)).json;
  assert.ok(status.downloaded_bytes < 300_000 + 64 * 1024, `at most a chunk over the cap (${status.downloaded_bytes})`);
  assert.equal(status.over_quota, true, JSON.stringify(status));
  const nextDay = Math.floor((Date.now() + shift) / DAY) * DAY + DAY;
  assert.equal(status.over_quota_until, new Date(nextDay).toISOString());
  assert.notEqual(status.status, 'ended', 'a periodic cap does not end the session');
  // Refused while over: a new connection carries nothing.
  assert.equal(await pushThrough(srv.vlessTcpPort!, id, 50_000), 0);
  // Another session of the same client is refused too.
  const other = (await call('POST', '/sessions', { client_id: 'q-bob', zone: 'de-fra', reusable: true })).json.id;
  assert.equal(await pushThrough(srv.vlessTcpPort!, other, 50_000), 0);

  // The day turns (the injected clock moves past midnight UTC): no call, and the same session relays again.
  shift += nextDay - (Date.now() + shift) + 1000;
  await waitFor(async () => (await pushThrough(srv.vlessTcpPort!, id, 50_000)) > 40_000, 10_000, 'served again after the day turned');
  const after = (await call('GET', `/sessions/${id}/status`)).json;
  assert.equal(after.over_quota, undefined, JSON.stringify(after));
  assert.ok(after.downloaded_bytes > status.downloaded_bytes, 'the lifetime counters keep counting');
  assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);
});

test('a weekly session cap cuts without ending the session, and lets it in again the next week', async () => {
  assert.equal((await call('PATCH', '/customer/limits/session', { downloaded_bytes: 200_000, reset_period: 'week', reset_anchor: '2026-01-05T00:00:00Z' })).status, 200);
  const id: string = (await call('POST', '/sessions', { client_id: 'q-week', zone: 'de-fra', reusable: true })).json.id;
  const got = await pushThrough(srv.vlessTcpPort!, id, 500_000);
  assert.ok(got < 500_000);
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.over_quota === true, 5000, 'over its weekly quota');
  const status = (await call('GET', `/sessions/${id}/status`)).json;
  assert.notEqual(status.status, 'ended');
  const until = Date.parse(status.over_quota_until);
  assert.equal(new Date(until).getUTCDay(), 1, 'weeks turn on the anchor\'s weekday (a Monday)');
  shift += until - (Date.now() + shift) + 1000;
  await waitFor(async () => (await pushThrough(srv.vlessTcpPort!, id, 50_000)) > 40_000, 10_000, 'served again the next week');
  assert.equal((await call('DELETE', '/customer/limits/session')).status, 204);
});

test('a rolling 30-day cap counts the usage history of the window: over it, refused', async () => {
  assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: 200_000, reset_period: 'rolling_30d' })).status, 200);
  const id: string = (await call('POST', '/sessions', { client_id: 'q-roll', zone: 'de-fra', reusable: true })).json.id;
  const got = await pushThrough(srv.vlessTcpPort!, id, 500_000);
  assert.ok(got < 500_000, 'cut at the cap');
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.over_quota === true, 8000, 'over the rolling quota');
  const status = (await call('GET', `/sessions/${id}/status`)).json;
  assert.equal(status.over_quota_until, undefined, 'a rolling window has no fixed renewal');
  // The window's base is rewritten from the history each second: still over once it has run again.
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await call('GET', `/sessions/${id}/status`)).json.over_quota, true);
  assert.equal(await pushThrough(srv.vlessTcpPort!, id, 50_000), 0, 'refused while the window holds the traffic');
  assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);
});

test('bad periods and anchors are 400', async () => {
  for (const body of [{ reset_period: 'hourly' }, { reset_period: 3 }, { downloaded_bytes: 1, reset_anchor: 'monday' }]) {
    const r = await call('PATCH', '/customer/limits/global', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.error.code, 'invalid_request');
  }
});

test('period arithmetic: days, weeks, calendar months from the anchor, the rolling window', () => {
  const at = (s: string) => Date.parse(s);
  assert.deepEqual(periodOf({ reset_period: 'day' }, at('2026-11-22T10:00:00Z')), { kind: 'day', start: at('2026-11-22T00:00:00Z'), end: at('2026-11-23T00:00:00Z') });
  assert.deepEqual(periodOf({ reset_period: 'day', reset_anchor: '2026-01-01T06:00:00Z' }, at('2026-11-22T05:00:00Z')), { kind: 'day', start: at('2026-11-21T06:00:00Z'), end: at('2026-11-22T06:00:00Z') });
  assert.deepEqual(periodOf({ reset_period: 'month', reset_anchor: '2026-01-31T00:00:00Z' }, at('2026-02-15T00:00:00Z')), { kind: 'month', start: at('2026-01-31T00:00:00Z'), end: at('2026-02-28T00:00:00Z') });
  assert.deepEqual(periodOf({ reset_period: 'month', reset_anchor: '2026-01-31T00:00:00Z' }, at('2026-03-30T00:00:00Z')), { kind: 'month', start: at('2026-02-28T00:00:00Z'), end: at('2026-03-31T00:00:00Z') });
  assert.deepEqual(periodOf({ reset_period: 'month', reset_anchor: '2026-03-15T12:00:00Z' }, at('2026-01-10T00:00:00Z')), { kind: 'month', start: at('2025-12-15T12:00:00Z'), end: at('2026-01-15T12:00:00Z') });
  assert.deepEqual(periodOf({ reset_period: 'rolling_30d' }, at('2026-11-22T00:00:00Z')), { kind: 'rolling_30d', start: at('2026-10-23T00:00:00Z'), end: null });
  assert.equal(periodOf({ reset_period: 'none' }, Date.now()), null);
  assert.equal(periodOf(undefined, Date.now()), null);
});

test('on PostgreSQL: a daily client cap cuts, and renews when the day turns', async (t) => {
  const pg = await startPostgres(t);
  const url = await pg.createDatabase('quota');
  const d = tempDir('vad-quota-pg-');
  const pgSrv = await startServer({ dataDir: d, database: url, port: 0, vlessTcpPort: 0, proxyPort: null, egress: 'allow-all', statsIntervalMs: 300, rateLimit: { max: 100_000, windowMs: 60_000 } });
  try {
    const token = (await pgSrv.services.data.createToken('pg-quota', 'owner')).token;
    const pgCall = (method: string, path: string, body?: unknown) => call(method, path, body, pgSrv.baseUrl, token);
    assert.equal((await pgCall('PATCH', '/customer/limits/client', { downloaded_bytes: 250_000, reset_period: 'day' })).status, 200);
    const id: string = (await pgCall('POST', '/sessions', { client_id: 'pg-q', zone: 'de-fra', reusable: true })).json.id;
    // The quota job records the period's bases within a second.
    await waitFor(async () => (await pgSrv.services.data.quotaBase((await pgSrv.services.data.getSessionOf((await pgSrv.services.tokenLookup.find(token))!.customer_id, id))!.customer_id, 'client', 'pg-q', Math.floor((Date.now() + shift) / DAY) * DAY)) !== undefined, 5000, 'base recorded');
    const got = await pushThrough(pgSrv.vlessTcpPort!, id, 600_000);
    assert.ok(got < 600_000);
    await waitFor(async () => (await pgCall('GET', `/sessions/${id}/status`)).json.over_quota === true, 8000, 'over quota on PostgreSQL');
    assert.equal(await pushThrough(pgSrv.vlessTcpPort!, id, 50_000), 0);
    const nextDay = Math.floor((Date.now() + shift) / DAY) * DAY + DAY;
    shift += nextDay - (Date.now() + shift) + 1000;
    await waitFor(async () => (await pushThrough(pgSrv.vlessTcpPort!, id, 50_000)) > 40_000, 12_000, 'served again on PostgreSQL');
    // A rolling window on PostgreSQL: its base is written from the usage history (the job's SQL runs there too).
    assert.equal((await pgCall('PATCH', '/customer/limits/client', { downloaded_bytes: 250_000, reset_period: 'rolling_30d' })).status, 200);
    const customerId = (await pgSrv.services.tokenLookup.find(token))!.customer_id;
    await waitFor(async () => (await pgSrv.services.data.quotaBase(customerId, 'client', 'pg-q', 0)) !== undefined, 5000, 'rolling base recorded on PostgreSQL');
  } finally {
    await pgSrv.close();
    removeDir(d);
  }
});
