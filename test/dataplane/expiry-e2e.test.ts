// Session expiry with real traffic: `expires_at` on POST /v2/sessions (or the session
// limits' default_lifetime_seconds) ends the session at that time, exactly like a cap: a live
// transfer through the VLESS data plane is cut, session_end is published, the status turns
// `ended` and a new connection is refused. A session nobody carries ends by the sweep, without
// events. Bad values are 400 in the error format. The same on PostgreSQL.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { openRaw } from '../helpers/sse.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openVlessEcho, startTcpEcho } from './helpers/targets.ts';

let srv: RunningServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let dir: string;
let owner: string;

before(async () => {
  dir = tempDir('vad-expiry-');
  srv = await startServer({ dataDir: dir, port: 0, egress: 'allow-all', statsIntervalMs: 300, rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = srv.ownerToken!;
  echo = await startTcpEcho();
});
after(async () => {
  await srv?.close();
  await echo?.close();
  if (dir) removeDir(dir);
});

const call = (method: string, path: string, body?: unknown, base = srv.baseUrl, token = owner) => callApi(base, token, method, path, body);
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

test('expires_at cuts a live transfer at that time: session_end, status ended, new connections refused', async () => {
  const expiresAt = inMs(2500);
  const made = await call('POST', '/sessions', { client_id: 'expiring', zone: 'de-fra', reusable: true, expires_at: expiresAt });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  assert.equal(made.json.expires_at, expiresAt);
  const id: string = made.json.id;
  assert.equal((await call('GET', `/sessions/${id}/status`)).json.expires_at, expiresAt);

  const stream = await openRaw(`${srv.baseUrl}/sessions/events?session_id=${id}`, { authorization: `Bearer ${owner}` });
  try {
    const conn = await openVlessEcho(srv.vlessTcpPort!, id, echo.port);
    assert.ok(conn.got() >= 4, 'the connection relays');
    // Keep bytes moving until the cut.
    const pump = setInterval(() => conn.s.writable && conn.s.write(Buffer.alloc(1024, 1)), 50);
    try {
      await conn.closed;
    } finally {
      clearInterval(pump);
    }
    const cutAt = Date.now();
    assert.ok(cutAt >= Date.parse(expiresAt) - 50, `cut ${Date.parse(expiresAt) - cutAt} ms before its expiry`);
    assert.ok(cutAt <= Date.parse(expiresAt) + 1500, `cut ${cutAt - Date.parse(expiresAt)} ms after its expiry`);
    await waitFor(() => stream.events().some((e) => e.event_type === 'session_end'), 5000, 'session_end');
    assert.deepEqual(stream.events().map((e) => e.event_type).filter((t) => t !== 'session_stats'), ['session_start', 'session_end']);
  } finally {
    stream.close();
  }
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.status === 'ended', 5000, 'status ended');
  const status = (await call('GET', `/sessions/${id}/status`)).json;
  assert.ok(status.uploaded_bytes > 0 && status.downloaded_bytes > 0, 'the bytes moved before the expiry stay counted');
  // A new connection is refused: it carries nothing.
  const again = await openVlessEcho(srv.vlessTcpPort!, id, echo.port);
  await again.closed;
  assert.equal(again.got(), 0);
});

test('a session nobody carries ends at its expiry by itself, without events', async () => {
  const made = await call('POST', '/sessions', { client_id: 'never-used', zone: 'de-fra', expires_at: inMs(1200) });
  assert.equal(made.status, 201);
  const id: string = made.json.id;
  assert.equal((await call('GET', `/sessions/${id}/status`)).json.status, 'created');
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.status === 'ended', 5000, 'ended by the sweep');
  const events = await openRaw(`${srv.baseUrl}/sessions/events?session_id=${id}`, { authorization: `Bearer ${owner}` });
  await new Promise((r) => setTimeout(r, 300));
  events.close();
  assert.deepEqual(events.events(), []);
  // A session without expires_at has none, and does not end.
  const plain = await call('POST', '/sessions', { client_id: 'forever', zone: 'de-fra' });
  assert.equal(plain.json.expires_at, undefined);
});

test('the session limits\' default_lifetime_seconds gives new sessions an expiry; bad values are 400', async () => {
  assert.equal((await call('PATCH', '/customer/limits/session', { default_lifetime_seconds: 3600 })).status, 200);
  const t0 = Date.now();
  const made = await call('POST', '/sessions', { client_id: 'defaulted', zone: 'de-fra' });
  assert.equal(made.status, 201);
  const at = Date.parse(made.json.expires_at);
  assert.ok(at >= t0 + 3_599_000 && at <= Date.now() + 3_600_000, made.json.expires_at);
  // An explicit expires_at wins over the default.
  const explicit = inMs(120_000);
  assert.equal((await call('POST', '/sessions', { client_id: 'explicit', zone: 'de-fra', expires_at: explicit })).json.expires_at, explicit);
  assert.equal((await call('DELETE', '/customer/limits/session')).status, 204);

  for (const expires_at of [inMs(-1000), '2020-01-01T00:00:00Z', 'tomorrow', 12345, inMs(11 * 365 * 86_400_000)]) {
    const r = await call('POST', '/sessions', { client_id: 'bad', zone: 'de-fra', expires_at });
    assert.equal(r.status, 400, String(expires_at));
    assert.equal(r.json.error.code, 'invalid_request');
  }
  for (const default_lifetime_seconds of [0, 59, 1.5, 'an hour', 11 * 365 * 86_400]) {
    const r = await call('PATCH', '/customer/limits/session', { default_lifetime_seconds });
    assert.equal(r.status, 400, String(default_lifetime_seconds));
  }
  // Only the session scope has a default lifetime.
  assert.equal((await call('PATCH', '/customer/limits/client', { default_lifetime_seconds: 3600 })).status, 400);
});

test('on PostgreSQL: expires_at is stored, shown, and a session nobody carries ends by itself', async (t) => {
  const pg = await startPostgres(t);
  const url = await pg.createDatabase('expiry');
  const d = tempDir('vad-expiry-pg-');
  const pgSrv = await startServer({ dataDir: d, database: url, port: 0, vlessTcpPort: 0, proxyPort: null, egress: 'allow-all', rateLimit: { max: 100_000, windowMs: 60_000 } });
  try {
    const token = (await pgSrv.services.data.createToken('pg-expiry', 'owner')).token;
    const pgCall = (method: string, path: string, body?: unknown) => call(method, path, body, pgSrv.baseUrl, token);
    const expiresAt = inMs(2000);
    const made = await pgCall('POST', '/sessions', { client_id: 'pg-exp', zone: 'de-fra', reusable: true, expires_at: expiresAt });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    assert.equal((await pgCall('GET', `/sessions/${made.json.id}`)).json.expires_at, expiresAt);
    // Live through this instance's data plane: cut at its expiry.
    const conn = await openVlessEcho(pgSrv.vlessTcpPort!, made.json.id, echo.port);
    assert.ok(conn.got() >= 4);
    await conn.closed;
    assert.ok(Date.now() >= Date.parse(expiresAt) - 50);
    await waitFor(async () => (await pgCall('GET', `/sessions/${made.json.id}/status`)).json.status === 'ended', 5000, 'ended on PostgreSQL');
    const idle = await pgCall('POST', '/sessions', { client_id: 'pg-idle', zone: 'de-fra', expires_at: inMs(1000) });
    await waitFor(async () => (await pgCall('GET', `/sessions/${idle.json.id}/status`)).json.status === 'ended', 5000, 'swept on PostgreSQL');
  } finally {
    await pgSrv.close();
    removeDir(d);
  }
});
