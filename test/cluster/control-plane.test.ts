// Two control-plane instances (startServer, each with its own local data plane) on one
// throwaway PostgreSQL: any of them answers any request. A session created on A is read on B;
// limits set on B are read on A; a token revoked on A is refused by B; both write events while
// one stream reads them all once, in id order, and a Last-Event-ID replay continues without a
// gap or a duplicate; a pause on B cuts a real v2ray transfer carried by A within 1 s, and the
// bytes it moved reach the database.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { startFileServer, type FileServer } from '../dataplane/helpers/targets.ts';
import { curlSocks, requireV2ray, startV2rayClient, type VlessConfiguration } from '../dataplane/helpers/v2ray.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openRaw } from '../helpers/sse.ts';

const MB = 1024 * 1024;
let pgServer: PgServer;
let a: RunningServer;
let b: RunningServer;
let owner: string;
let customerId: string;
let files: FileServer;
const dirs: string[] = [];

async function start(url: string): Promise<RunningServer> {
  const dir = tempDir('vad-cl-');
  dirs.push(dir);
  // allow-all: the test's file server is on loopback, which the default egress policy refuses.
  return startServer({ dataDir: dir, database: url, port: 0, vlessTcpPort: null, proxyPort: null, statsIntervalMs: 300, heartbeatIntervalMs: 1000, egress: 'allow-all' });
}

before(async () => {
  requireV2ray();
  pgServer = await startPostgres();
  const url = pgServer.url();
  // Both start at once on the empty database: the migrations run once.
  [a, b] = await Promise.all([start(url), start(url)]);
  owner = (await a.services.data.createToken('acme', 'owner')).token;
  customerId = (await a.services.data.findToken(owner))!.customer_id;
  files = await startFileServer({ big: 4 * MB, small: 20_000 });
});

after(async () => {
  await a?.close();
  await b?.close();
  await files?.close();
  await pgServer?.destroy();
  for (const d of dirs) removeDir(d);
});

async function api(srv: RunningServer, method: string, path: string, body?: unknown, token = owner): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(`${srv.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers };
}

test('a session created on A is read, listed and paused on B; limits set on B are read on A', async () => {
  const created = await api(a, 'POST', '/sessions', { client_id: 'c-1', zone: 'de-fra', reusable: true });
  assert.equal(created.status, 201);
  const id = created.json.id as string;
  const onB = await api(b, 'GET', `/sessions/${id}`);
  assert.equal(onB.status, 200);
  assert.equal(onB.json.client_id, 'c-1');
  assert.equal((await api(b, 'GET', `/sessions/${id}/status`)).json.status, 'created');
  const list = await api(b, 'GET', '/sessions?client_id=c-1');
  assert.deepEqual(list.json.sessions.map((s: { id: string }) => s.id), [id]);
  assert.equal((await api(b, 'PATCH', `/sessions/${id}/pause`)).status, 200);
  assert.equal((await api(a, 'GET', `/sessions/${id}/status`)).json.paused, true);
  assert.equal((await api(a, 'PATCH', `/sessions/${id}/pause`)).json.error.code, 'session_already_paused');

  assert.equal((await api(b, 'PATCH', '/customer/limits/client', { max_sessions: 7 })).status, 200);
  assert.equal((await api(a, 'GET', '/customer/limits/client')).json.max_sessions, 7);
  assert.equal((await api(a, 'DELETE', '/customer/limits/client')).status, 204);
  assert.equal((await api(b, 'GET', '/customer/limits/client')).status, 404);
});

test('a token revoked on A is refused by B at once; one created on B works on A', async () => {
  const t = (await b.services.data.createToken('acme', 'agent')).token;
  assert.equal((await api(a, 'GET', '/zones', undefined, t)).status, 200);
  assert.equal((await api(b, 'GET', '/zones', undefined, t)).status, 200);
  assert.ok(await a.services.data.revokeToken(t));
  // B cached the token a moment ago: the vad_tokens notification drops that cache.
  await waitFor(async () => (await api(b, 'GET', '/zones', undefined, t)).status === 401, 2000, 'B refuses the revoked token');
  assert.equal((await api(a, 'GET', '/zones', undefined, t)).status, 401);
});

test('an event stream open on B with a token revoked on A is closed with the error record', async () => {
  const t = (await a.services.data.createToken('acme', 'agent')).token;
  const stream = await openRaw(`${b.baseUrl}/sessions/events?tail=0`, { authorization: `Bearer ${t}` });
  assert.equal(stream.status, 200);
  const t0 = performance.now();
  assert.ok(await a.services.data.revokeToken(t));
  await Promise.race([stream.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('the stream stayed open')), 3000))]);
  assert.ok(performance.now() - t0 < 2000, 'closed within a second or so');
  assert.match(stream.text(), /"code":"unauthorized"/);
});

test('events written by A and B reach one stream once each in id order; Last-Event-ID replays the rest', async () => {
  const stream = await openRaw(`${b.baseUrl}/sessions/events?event_type=session_stats&session_id=ev-a&session_id=ev-b`, { authorization: `Bearer ${owner}` });
  assert.equal(stream.status, 200);
  const ids = () =>
    stream
      .frames()
      .map((f) => /^id: (\d+)$/m.exec(f)?.[1])
      .filter((x): x is string => x !== undefined)
      .map(Number);
  const written: number[] = [];
  const burst = async (srv: RunningServer, sessionId: string) => {
    for (let i = 0; i < 60; i++) {
      const e = await srv.services.publish({ customerId, sessionId, type: 'session_stats', duration: i, uploaded_bytes: i, downloaded_bytes: i });
      written.push(e.id);
    }
  };
  // Both write at once, four writers in all, while the stream reads.
  await Promise.all([burst(a, 'ev-a'), burst(b, 'ev-b'), burst(a, 'ev-b'), burst(b, 'ev-a')]);
  written.sort((x, y) => x - y);
  await waitFor(() => ids().length >= written.length, 5000, 'every event on the stream');
  stream.close();
  assert.deepEqual(ids(), written, 'each event once, in increasing id order');

  // Resume from the middle on the other instance while both keep writing.
  const middle = written[100];
  const resumed = await openRaw(`${a.baseUrl}/sessions/events?event_type=session_stats&session_id=ev-a&session_id=ev-b`, {
    authorization: `Bearer ${owner}`,
    'last-event-id': String(middle),
  });
  const more: number[] = [];
  await Promise.all(
    [a, b].map(async (srv, n) => {
      for (let i = 0; i < 30; i++) more.push((await srv.services.publish({ customerId, sessionId: n ? 'ev-b' : 'ev-a', type: 'session_stats', duration: i, uploaded_bytes: 0, downloaded_bytes: 0 })).id);
    }),
  );
  const expected = [...written.filter((id) => id > middle), ...more.sort((x, y) => x - y)];
  const got = () =>
    resumed
      .frames()
      .map((f) => /^id: (\d+)$/m.exec(f)?.[1])
      .filter((x): x is string => x !== undefined)
      .map(Number);
  await waitFor(() => got().length >= expected.length, 5000, 'the replay and the live events');
  resumed.close();
  assert.deepEqual(got(), expected, 'no gap, no duplicate after Last-Event-ID');
});

test('pause on B cuts a real transfer carried by A within 1 s; the moved bytes reach the database', async () => {
  const created = await api(b, 'POST', '/sessions', { client_id: 'c-move', zone: 'de-fra', reusable: true });
  assert.equal(created.status, 201);
  const id = created.json.id as string;
  // Created on B, carried by A's data plane (a client behind a load balancer may land anywhere).
  const conf = { ...(created.json.configuration as VlessConfiguration), port: a.apiPort };
  const v = await startV2rayClient(conf);
  try {
    const small = await curlSocks(v.socksPort, files.url('/file/small'));
    assert.equal(small.code, 0, small.stderr);
    const slow = curlSocks(v.socksPort, files.url('/slow/big?rate=400000'));
    await waitFor(() => a.services.dataPlane!.live(id)?.open_connections === 1, 5000, 'the transfer runs on A');
    await new Promise((r) => setTimeout(r, 300));
    const t0 = performance.now();
    assert.equal((await api(b, 'PATCH', `/sessions/${id}/pause`)).status, 200);
    const cut = await slow;
    const elapsed = performance.now() - t0;
    assert.notEqual(cut.code, 0, 'the transfer was cut');
    assert.ok(elapsed < 1000, `cut after ${elapsed.toFixed(0)} ms`);
    const refused = await curlSocks(v.socksPort, files.url('/file/small'), [], 5);
    assert.notEqual(refused.code, 0, 'a paused session is refused on A');
  } finally {
    await v.close();
  }
  // A adds what it moved to the database: B, which carried nothing, reads it.
  await waitFor(async () => (await api(b, 'GET', `/sessions/${id}/status`)).json.downloaded_bytes >= 20_000, 3000, 'the counters on B');
  const row = await b.services.data.getSession(id);
  assert.ok(row!.downloaded_bytes >= 20_000);
});

test('one session carried by A and B at once: each adds its bytes, none overwrites; a limit set on B cuts A at once', async () => {
  const beta = (await a.services.data.createToken('beta', 'owner')).token;
  const created = await api(a, 'POST', '/sessions', { client_id: 'c-both', zone: 'de-fra', reusable: true }, beta);
  assert.equal(created.status, 201);
  const id = created.json.id as string;
  const conf = created.json.configuration as VlessConfiguration;
  const [va, vb] = await Promise.all([startV2rayClient({ ...conf, port: a.apiPort }), startV2rayClient({ ...conf, port: b.apiPort })]);
  try {
    const [ra, rb] = await Promise.all([curlSocks(va.socksPort, files.url('/file/big')), curlSocks(vb.socksPort, files.url('/file/big'))]);
    assert.equal(ra.code, 0, ra.stderr);
    assert.equal(rb.code, 0, rb.stderr);
    // Both data planes carried the session at the same time; the database holds the sum.
    await waitFor(async () => (await b.services.data.getSession(id))!.downloaded_bytes >= 8 * MB, 5000, 'both transfers counted');
    const sum = (await a.services.data.sumCounters((await a.services.data.findToken(beta))!.customer_id)).downloaded_bytes;
    assert.ok(sum >= 8 * MB && sum < 8 * MB + 200_000, `customer total ${sum}`);

    const slow = curlSocks(va.socksPort, files.url('/slow/big?rate=400000'));
    await waitFor(() => a.services.dataPlane!.live(id)?.open_connections === 1, 5000, 'the transfer runs on A');
    const t0 = performance.now();
    // A session byte cap below what the session has moved, set on B: A hears it (vad_limits) and cuts.
    assert.equal((await api(b, 'PATCH', '/customer/limits/session', { downloaded_bytes: 1_000_000 }, beta)).status, 200);
    const cut = await slow;
    const elapsed = performance.now() - t0;
    assert.notEqual(cut.code, 0, 'the transfer was cut');
    assert.ok(elapsed < 1500, `cut after ${elapsed.toFixed(0)} ms`);
  } finally {
    await Promise.all([va.close(), vb.close()]);
  }
});
