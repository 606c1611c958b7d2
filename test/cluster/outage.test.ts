// PostgreSQL killed with `kill -9` under a running control plane: requests during the outage
// get the error record (500 service_unavailable with Retry-After) quickly, never a hang; after
// PostgreSQL restarts the same process serves again by itself, and its notifications (token
// revocation, the event stream) work again.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { assertErrorBody, removeDir, tempDir, waitFor } from '../helpers/server.ts';

let pgServer: PgServer;
let srv: RunningServer;
let owner: string;
let dir: string;

before(async () => {
  pgServer = await startPostgres();
  dir = tempDir('vad-outage-');
  srv = await startServer({ dataDir: dir, database: pgServer.url(), port: 0, vlessTcpPort: null, proxyPort: null, dataPlane: null });
  owner = srv.ownerToken!;
  assert.ok(owner, 'the first start on an empty database made the owner token');
});

after(async () => {
  await srv?.close();
  await pgServer?.destroy();
  removeDir(dir);
});

async function timed(method: string, path: string, body?: unknown, token = owner): Promise<{ status: number; json: any; headers: Headers; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${srv.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers, ms: performance.now() - t0 };
}

test('kill -9 of PostgreSQL: 500 service_unavailable with Retry-After at once; recovery by itself after the restart', async () => {
  const created = await timed('POST', '/sessions', { client_id: 'o-1', zone: 'de-fra', reusable: true });
  assert.equal(created.status, 201);
  const id = created.json.id as string;

  const health = () => fetch(`${srv.baseUrl}/health`, { signal: AbortSignal.timeout(15_000) });
  const healthy = await health();
  assert.equal(healthy.status, 200);
  assert.deepEqual(await healthy.json(), { status: 'ok' });

  await pgServer.kill9();
  // The health check (no token) says so at once, for a load balancer to stop sending requests here.
  const down = await health();
  assert.equal(down.status, 500);
  assert.equal(((await down.json()) as { error: { code: string } }).error.code, 'service_unavailable');
  assert.ok(Number(down.headers.get('retry-after')) >= 1);
  // A fresh token (not cached) and a cached one, a read, a write, the event stream: each gets the record.
  const other = 'vad_' + 'x'.repeat(43);
  for (const [method, path, body, token] of [
    ['GET', `/sessions/${id}/status`, undefined, owner],
    ['POST', '/sessions', { client_id: 'o-2', zone: 'de-fra' }, owner],
    ['PATCH', `/sessions/${id}/pause`, undefined, owner],
    ['GET', '/customer/limits/global', undefined, owner],
    ['GET', '/zones', undefined, other],
  ] as const) {
    const r = await timed(method, path, body, token);
    assert.equal(r.status, 500, `${method} ${path}: ${JSON.stringify(r.json)}`);
    assertErrorBody(r.json);
    assert.equal(r.json.error.code, 'service_unavailable');
    assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
    assert.ok(r.ms < 5000, `${method} ${path} answered in ${r.ms.toFixed(0)} ms`);
  }
  const stream = await fetch(`${srv.baseUrl}/sessions/events`, { headers: { authorization: `Bearer ${owner}` }, signal: AbortSignal.timeout(15_000) });
  assert.equal(stream.status, 500);
  assert.ok(stream.headers.get('retry-after'));
  assert.match(await stream.text(), /service_unavailable/);

  await pgServer.restart();
  await waitFor(async () => (await timed('GET', `/sessions/${id}/status`)).status === 200, 15_000, 'the API serves again');
  await waitFor(async () => (await health()).status === 200, 15_000, 'healthy again');
  assert.equal((await timed('PATCH', `/sessions/${id}/pause`)).status, 200);
  // The LISTEN connection came back too: a revocation reaches this instance's token cache.
  const t = (await srv.services.data.createToken('acme-2', 'owner')).token;
  assert.equal((await timed('GET', '/zones', undefined, t)).status, 200);
  const store2 = await (await import('../../server/store/pg/store.ts')).PgStore.open(pgServer.url());
  try {
    assert.ok(await store2.revokeToken(t));
  } finally {
    await store2.close();
  }
  await waitFor(async () => (await timed('GET', '/zones', undefined, t)).status === 401, 3000, 'the revocation from another process applies');
});
