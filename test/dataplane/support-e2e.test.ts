// Support's view against the real service (SQLite): a session's live connections while v2ray
// and a raw VLESS client move bytes (gone once they close), and the refusals with their reasons
// (paused, a client cap, max_sessions, max_reconnections, the connection cap, the churn limit, the
// egress policy, an ended session, the proxy's 407 and 412, a disabled and an expired client) per
// session and client; a SOCKS5 CONNECT listed and its refusals recorded with transport socks5;
// agents read them, another customer gets 404.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { openVlessEcho, startFileServer, startTcpEcho, type FileServer } from './helpers/targets.ts';
import { curl, curlSocks, requireV2ray, startV2rayClient, type VlessConfiguration } from './helpers/v2ray.ts';
import { callApi } from '../helpers/http.ts';
import { closed, open, readN, socksAuth, socksRequest } from './helpers/socks5-client.ts';

const MB = 1024 * 1024;
let srv: RunningServer;
let files: FileServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let dir: string;
let token: string;

before(async () => {
  requireV2ray();
  dir = mkdtempSync(join(tmpdir(), 'vad-support-'));
  srv = await startServer({ dataDir: dir, port: 0, statsIntervalMs: 300, heartbeatIntervalMs: 1000, egress: 'allow-all' });
  token = srv.ownerToken!;
  files = await startFileServer({ big: 4 * MB, small: 20_000 });
  echo = await startTcpEcho();
});
after(async () => {
  await srv?.close();
  await files?.close();
  await echo?.close();
  rmSync(dir, { recursive: true, force: true });
});

const api = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, token, method, path, body);
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` every 100 ms until `ok` holds for its answer (at most `ms`). */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 5000): Promise<T> {
  const end = performance.now() + ms;
  let v = await read();
  while (!ok(v) && performance.now() < end) {
    await settle(100);
    v = await read();
  }
  assert.ok(ok(v), `not reached within ${ms} ms: ${JSON.stringify(v)}`);
  return v;
}

interface Conn { id: string; transport: string; client_address: string; node: string; destination: { host: string; port: number }; uploaded_bytes: number; downloaded_bytes: number; upload_speed: number; download_speed: number; opened_at: string }
interface Refusals { refusals: Array<{ at: string; reason: string; transport: string; client_address: string; node: string; session_id: string }>; counts_last_hour: Record<string, number>; unanswered_nodes: string[] }

const connections = async (id: string) => (await api('GET', `/sessions/${id}/connections`)).json.connections as Conn[];
const refusals = async (path: string) => (await api('GET', path)).json as Refusals;
const session = async (client: string, extra: object = {}) => {
  const r = await api('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true, ...extra });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json as { id: string; configuration: VlessConfiguration };
};

test('a real transfer shows as a live connection with its bytes and speed, and is gone when it closes', async () => {
  const s = await session('support-live');
  assert.deepEqual(await connections(s.id), []);
  const v = await startV2rayClient(s.configuration);
  try {
    const transfer = curlSocks(v.socksPort, files.url('/slow/big?rate=400000'));
    const [c] = await until(() => connections(s.id), (l) => l.length === 1 && l[0].downloaded_bytes > 100_000 && l[0].download_speed > 200_000);
    assert.equal(c.transport, 'ws');
    assert.equal(c.node, 'local');
    assert.deepEqual(c.destination, { host: '127.0.0.1', port: files.port });
    assert.match(c.client_address, /127\.0\.0\.1/);
    assert.ok(c.uploaded_bytes > 0, 'the request went up');
    assert.ok(c.download_speed < 800_000, `speed ${c.download_speed} for a 400,000 B/s source`);
    assert.ok(Date.now() - Date.parse(c.opened_at) < 10_000);
    // a raw VLESS client over TCP next to it
    const raw = await openVlessEcho(srv.vlessTcpPort!, s.id, echo.port);
    const both = await until(() => connections(s.id), (l) => l.length === 2);
    const tcp = both.find((x) => x.transport === 'tcp')!;
    assert.deepEqual(tcp.destination, { host: '127.0.0.1', port: echo.port });
    assert.equal(tcp.uploaded_bytes, 2);
    raw.s.destroy();
    await until(() => connections(s.id), (l) => l.length === 1 && l[0].transport === 'ws');
    (await transfer);
    await until(() => connections(s.id), (l) => l.length === 0);
  } finally {
    await v.close();
  }
});

test('refusals: paused, an ended session, the proxy 407, listed with reasons and counted per hour', async () => {
  const s = await session('support-refused');
  assert.equal((await api('PATCH', `/sessions/${s.id}/pause`)).status, 200);
  const paused = await openVlessEcho(srv.vlessTcpPort!, s.id, echo.port);
  await paused.closed;
  assert.ok(paused.got() < 4, 'nothing relayed while paused');
  assert.equal((await api('PATCH', `/sessions/${s.id}/resume`)).status, 200);
  // the proxy with the session's id and a wrong password
  const bad = await curl(['-D', '-', '-x', `http://${s.id}:wrong@127.0.0.1:${srv.proxyPort}`, files.url('/file/small')]);
  assert.match(bad.body.toString('latin1'), /^HTTP\/1\.1 407/);
  // a country no zone serves: 412, through a CONNECT tunnel
  const nowhere = await curl(['-p', '-D', '-', '-x', `http://${s.id}-cc-ZZ:${s.id}@127.0.0.1:${srv.proxyPort}`, files.url('/file/small')]);
  assert.match(nowhere.body.toString('latin1'), /^HTTP\/1\.1 412/);
  const r = await refusals(`/sessions/${s.id}/refusals`);
  assert.deepEqual(r.refusals.map((x) => [x.reason, x.transport, x.node]), [
    ['location_unavailable', 'proxy_connect', 'local'],
    ['proxy_auth_required', 'proxy_request', 'local'],
    ['paused', 'tcp', 'local'],
  ]);
  assert.ok(r.refusals.every((x) => x.session_id === s.id && /127\.0\.0\.1/.test(x.client_address)));
  assert.deepEqual(r.counts_last_hour, { paused: 1, proxy_auth_required: 1, location_unavailable: 1 });
  assert.deepEqual(r.unanswered_nodes, []);

  // a one-shot session used once has ended: it is refused as ended
  const once = await session('support-refused', { reusable: false });
  const first = await openVlessEcho(srv.vlessTcpPort!, once.id, echo.port);
  assert.equal(first.got(), 4);
  first.s.destroy();
  await until(async () => (await api('GET', `/sessions/${once.id}/status`)).json.status, (st) => st === 'ended');
  const again = await openVlessEcho(srv.vlessTcpPort!, once.id, echo.port);
  await again.closed;
  const ended = await refusals(`/sessions/${once.id}/refusals`);
  assert.equal(ended.refusals[0].reason, 'ended');
  // the client's view holds both sessions' refusals, newest first
  const client = await refusals('/clients/support-refused/refusals');
  assert.deepEqual(client.refusals.map((x) => x.reason), ['ended', 'location_unavailable', 'proxy_auth_required', 'paused']);
  assert.deepEqual(client.counts_last_hour, { ended: 1, paused: 1, proxy_auth_required: 1, location_unavailable: 1 });
});

test('SOCKS5 on the proxy port: a CONNECT listed as socks5 with its destination; its refusals recorded as socks5', async () => {
  const s = await session('support-socks5');
  const c = await socksRequest(srv.proxyPort!, s.id, s.id, 1, '127.0.0.1', echo.port);
  assert.equal(c.reply.rep, 0);
  c.s.write('ping');
  assert.equal((await readN(c.s, 4)).toString(), 'ping');
  const [live] = await until(() => connections(s.id), (l) => l.length === 1 && l[0].uploaded_bytes === 4);
  assert.equal(live.transport, 'socks5');
  assert.equal(live.node, 'local');
  assert.deepEqual(live.destination, { host: '127.0.0.1', port: echo.port });
  assert.match(live.client_address, /127\.0\.0\.1/);
  assert.equal(live.downloaded_bytes, 4);
  c.s.destroy();
  await until(() => connections(s.id), (l) => l.length === 0);
  // a wrong password (RFC 1929 status 1), a malformed name with the right one (reply 0x02), no zone there (0x03)
  const wrong = await open(srv.proxyPort!);
  assert.deepEqual(await socksAuth(wrong, s.id, 'wrong'), { ok: false, status: 1 });
  await closed(wrong);
  for (const [user, rep] of [[`${s.id}-town-x`, 0x02], [`${s.id}-cc-ZZ`, 0x03]] as const) {
    const r = await socksRequest(srv.proxyPort!, user, s.id, 1, '127.0.0.1', echo.port);
    assert.equal(r.reply.rep, rep, user);
    await closed(r.s);
  }
  const r = await refusals(`/sessions/${s.id}/refusals`);
  assert.deepEqual(r.refusals.map((x) => [x.reason, x.transport, x.node]), [
    ['location_unavailable', 'socks5', 'local'],
    ['proxy_unknown_param', 'socks5', 'local'],
    ['proxy_auth_required', 'socks5', 'local'],
  ]);
  assert.ok(r.refusals.every((x) => x.session_id === s.id && /127\.0\.0\.1/.test(x.client_address)));
});

test('refusals: max_sessions and a client cap, per session and per client', async () => {
  assert.equal((await api('PATCH', '/customer/limits/client', { max_sessions: 1 })).status, 200);
  try {
    const a = await session('support-max');
    const b = await session('support-max');
    const held = await openVlessEcho(srv.vlessTcpPort!, a.id, echo.port);
    assert.equal(held.got(), 4);
    const second = await openVlessEcho(srv.vlessTcpPort!, b.id, echo.port);
    await second.closed;
    held.s.destroy();
    const r = await refusals(`/sessions/${b.id}/refusals`);
    assert.equal(r.refusals[0].reason, 'max_sessions');
    assert.deepEqual(r.counts_last_hour, { max_sessions: 1 });
    assert.equal((await refusals(`/sessions/${a.id}/refusals`)).refusals.length, 0);
    const client = await refusals('/clients/support-max/refusals');
    assert.deepEqual(client.refusals.map((x) => [x.reason, x.session_id]), [['max_sessions', b.id]]);
  } finally {
    await api('DELETE', '/customer/limits/client');
  }
  // a client over its download cap
  const c = await session('support-cap');
  const moved = await openVlessEcho(srv.vlessTcpPort!, c.id, echo.port);
  moved.s.destroy();
  await settle(700); // its counters saved
  assert.equal((await api('PATCH', '/customer/limits/client', { downloaded_bytes: 1 })).status, 200);
  try {
    const over = await openVlessEcho(srv.vlessTcpPort!, c.id, echo.port);
    await over.closed;
    const r = await refusals(`/sessions/${c.id}/refusals`);
    assert.equal(r.refusals[0].reason, 'client_cap');
  } finally {
    await api('DELETE', '/customer/limits/client');
  }
});

test('refusals: a disabled client, then an expired one (client records), per session and per client', async () => {
  const s = await session('support-records');
  assert.equal((await api('PATCH', '/clients/support-records', { disabled: true })).status, 200);
  const off = await openVlessEcho(srv.vlessTcpPort!, s.id, echo.port);
  await off.closed;
  assert.ok(off.got() < 4, 'nothing relayed while disabled');
  assert.equal((await refusals(`/sessions/${s.id}/refusals`)).refusals[0].reason, 'client_disabled');
  // Enabled again with an expiry a moment ahead: served until then, refused as expired after.
  const soon = new Date(Date.now() + 1500).toISOString();
  assert.equal((await api('PATCH', '/clients/support-records', { disabled: false, expires_at: soon })).status, 200);
  await settle(Math.max(0, Date.parse(soon) - Date.now()) + 300);
  const late = await openVlessEcho(srv.vlessTcpPort!, s.id, echo.port);
  await late.closed;
  assert.ok(late.got() < 4, 'nothing relayed after the client expired');
  const client = await refusals('/clients/support-records/refusals');
  assert.deepEqual(client.refusals.map((x) => [x.reason, x.session_id]), [['client_expired', s.id], ['client_disabled', s.id]]);
  assert.deepEqual(client.counts_last_hour, { client_disabled: 1, client_expired: 1 });
});

test('refusals: max_reconnections, the connection cap, the churn limit and the egress policy (a server with default egress)', async () => {
  const d2 = mkdtempSync(join(tmpdir(), 'vad-support-tight-'));
  const d3 = mkdtempSync(join(tmpdir(), 'vad-support-egress-'));
  const tight = await startServer({ dataDir: d2, port: 0, statsIntervalMs: 300, egress: 'allow-all', connectionLimits: { maxConnectionsPerSession: 2, connectionRatePerSecond: 1, connectionBurst: 4, reconnectGraceMs: 0 } });
  const guarded = await startServer({ dataDir: d3, port: 0, statsIntervalMs: 300 });
  const on = (server: RunningServer) => ({
    call: (method: string, path: string, body?: unknown) => callApi(server.baseUrl, server.ownerToken!, method, path, body),
    make: async (client: string) => (await callApi(server.baseUrl, server.ownerToken!, 'POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true })).json as { id: string },
    reasons: async (id: string) => ((await callApi(server.baseUrl, server.ownerToken!, 'GET', `/sessions/${id}/refusals`)).json as Refusals).refusals.map((r) => r.reason),
  });
  const { call, make, reasons } = on(tight);
  try {
    // The default egress policy refuses loopback: the VLESS destination is refused, and listed.
    const g = on(guarded);
    const egress = await g.make('guarded-egress');
    const refused = await openVlessEcho(guarded.vlessTcpPort!, egress.id, echo.port);
    await refused.closed;
    assert.deepEqual(await g.reasons(egress.id), ['destination_forbidden']);

    // max_reconnections 0: the first connection of a reusable session is served, the next refused.
    assert.equal((await call('PATCH', '/customer/limits/client', { max_reconnections: 0 })).status, 200);
    const once = await make('tight-reconnect');
    const first = await openVlessEcho(tight.vlessTcpPort!, once.id, echo.port);
    first.s.destroy();
    await first.closed;
    const second = await openVlessEcho(tight.vlessTcpPort!, once.id, echo.port);
    await second.closed;
    assert.ok((await reasons(once.id)).includes('max_reconnections'), JSON.stringify(await reasons(once.id)));
    assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);

    // The connection cap (2 open at once), then the churn limit (a burst of 4, then 1 a second).
    const busy = await make('tight-busy');
    const open: Array<Awaited<ReturnType<typeof openVlessEcho>>> = [];
    for (let i = 0; i < 8; i++) open.push(await openVlessEcho(tight.vlessTcpPort!, busy.id, echo.port));
    const got = await reasons(busy.id);
    assert.ok(got.includes('too_many_connections'), JSON.stringify(got));
    assert.ok(got.includes('connection_rate'), JSON.stringify(got));
    for (const c of open) c.s.destroy();
  } finally {
    await tight.close();
    await guarded.close();
    rmSync(d2, { recursive: true, force: true });
    rmSync(d3, { recursive: true, force: true });
  }
});

test('404 in the error format for an unknown session; a client with no refusals has an empty list', async () => {
  for (const path of ['connections', 'refusals']) {
    const r = await api('GET', `/sessions/00000000-0000-4000-8000-000000000000/${path}`);
    assert.equal(r.status, 404);
    assert.equal(r.json.error.code, 'session_not_found');
  }
  // agents read their own customer's sessions
  const me = (await api('GET', '/server-info')).json.token.customer as string;
  const agent = (await srv.services.data.createToken(me, 'agent')).token;
  const mine0 = await session('support-agent');
  const asAgent = await callApi(srv.baseUrl, agent, 'GET', `/sessions/${mine0.id}/connections`);
  assert.equal(asAgent.status, 200);
  assert.deepEqual(asAgent.json, { connections: [], unanswered_nodes: [], unanswered_instances: [] });
  assert.equal((await callApi(srv.baseUrl, agent, 'GET', '/clients/support-agent/refusals')).status, 200);
  await srv.services.data.ensureCustomer('support-other');
  const otherToken = (await srv.services.data.createToken('support-other', 'agent')).token;
  const mine = await session('support-tenant');
  const foreign = await callApi(srv.baseUrl, otherToken, 'GET', `/sessions/${mine.id}/connections`);
  assert.equal(foreign.status, 404);
  const none = await refusals('/clients/nobody-here/refusals');
  assert.deepEqual(none, { refusals: [], counts_last_hour: {}, unanswered_nodes: [], unanswered_instances: [] });
  assert.equal((await api('GET', '/clients/bad%20id/refusals')).status, 400);
});
