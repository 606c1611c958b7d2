// GET /metrics: scraped and parsed as the Prometheus text format after real
// traffic through the data plane of a listening server (raw VLESS over TCP to a loopback echo
// server). Requests by route pattern and status; bytes by zone and node equal the session's
// counters; open connections while one relays; refusals by reason; event-stream subscribers and
// delivery lag; control-store latency. Protection: loopback only without a metrics token, the
// token (and nothing else) with one. On PostgreSQL the same scrape works on a cluster instance.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';
import { isLoopback } from '../../server/http/metrics.ts';
import { callApi } from '../helpers/http.ts';
import { listen, makeServer, removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openRaw } from '../helpers/sse.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { echoBytes, startTcpEcho } from '../dataplane/helpers/targets.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text exposition format (0.0.4): HELP/TYPE comments, then
 * `name{label="value",...} number` lines. Any other line fails the test: the format is checked,
 * not only searched.
 */
function parseMetrics(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1], type[2]);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([-+]?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|Inf|[Nn][Aa][Nn]))$/.exec(line); // prom-client writes NaN as "Nan" (Prometheus reads any case)
    assert.ok(m, `not a metrics line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
      let l: RegExpExecArray | null;
      let consumed = 0;
      while ((l = re.exec(m[2]))) {
        labels[l[1]] = l[2].replace(/\\(.)/g, '$1');
        consumed = re.lastIndex;
      }
      assert.equal(consumed, m[2].length, `bad labels in ${line}`);
    }
    samples.push({ name: m[1], labels, value: Number(m[3].replace('Inf', 'Infinity')) });
  }
  return { samples, types };
}

const pick = (samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
const valueOf = (samples: Sample[], name: string, labels: Record<string, string> = {}): number => pick(samples, name, labels).reduce((a, s) => a + s.value, 0);

let srv: RunningServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let dir: string;
let owner: string;

before(async () => {
  dir = tempDir('vad-metrics-');
  srv = await startServer({ dataDir: dir, port: 0, egress: 'allow-all', statsIntervalMs: 300, rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = srv.ownerToken!;
  echo = await startTcpEcho();
});
after(async () => {
  await srv?.close();
  await echo?.close();
  if (dir) removeDir(dir);
});

async function scrape(base = srv.origin, headers: Record<string, string> = {}): Promise<{ samples: Sample[]; types: Map<string, string> }> {
  const res = await fetch(`${base}/metrics`, { headers });
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

/** A VLESS connection to the echo server; resolves once `n` bytes came back. */
const relay = (id: string, n: number): Promise<Socket> => echoBytes(srv.vlessTcpPort!, id, echo.port, n, { fill: 3 });

test('metrics after real traffic: requests, bytes by zone and node, open connections, refusals, streams, store latency', async () => {
  // Requests by route pattern: three reads of /v2/zones, one 404 of a session id (the pattern, not the id).
  for (let i = 0; i < 3; i++) assert.equal((await callApi(srv.baseUrl, owner, 'GET', '/zones')).status, 200);
  assert.equal((await callApi(srv.baseUrl, owner, 'GET', '/sessions/00000000-0000-4000-8000-000000000000')).status, 404);

  const created = await callApi(srv.baseUrl, owner, 'POST', '/sessions', { client_id: 'metrics-bob', zone: 'de-fra', reusable: true });
  assert.equal(created.status, 201);
  const id: string = created.json.id;

  // An event stream open while the traffic runs: a subscriber, and live deliveries (lag).
  const stream = await openRaw(`${srv.baseUrl}/sessions/events`, { authorization: `Bearer ${owner}` });
  assert.equal(stream.status, 200);
  try {
    const open = await relay(id, 300_000);
    // One connection relays now.
    await waitFor(async () => valueOf((await scrape()).samples, 'vad_open_connections', { zone: 'de-fra', node: 'local' }) === 1, 5000, 'one open connection');
    const live = await scrape();
    assert.equal(valueOf(live.samples, 'vad_event_stream_subscribers'), 1);
    open.destroy();
    await relay(id, 100_000).then((s) => s.destroy());
    await waitFor(async () => valueOf((await scrape()).samples, 'vad_open_connections') === 0, 5000, 'no open connection');

    // The bytes counted by zone and node equal the session's counters once they are saved.
    let status: { uploaded_bytes: number; downloaded_bytes: number; status: string } = { uploaded_bytes: 0, downloaded_bytes: 0, status: '' };
    await waitFor(async () => {
      status = (await callApi(srv.baseUrl, owner, 'GET', `/sessions/${id}/status`)).json;
      const m = (await scrape()).samples;
      return status.uploaded_bytes === 400_000 && valueOf(m, 'vad_relayed_bytes_total', { zone: 'de-fra', node: 'local', direction: 'up' }) === status.uploaded_bytes &&
        valueOf(m, 'vad_relayed_bytes_total', { zone: 'de-fra', node: 'local', direction: 'down' }) === status.downloaded_bytes;
    }, 10_000, 'bytes metrics equal the counters');
    await waitFor(() => stream.events().some((e) => e.event_type === 'session_start'), 5000, 'a live event');
  } finally {
    stream.close();
  }

  // A refusal: the session paused, a new connection is refused at admission.
  assert.equal((await callApi(srv.baseUrl, owner, 'PATCH', `/sessions/${id}/pause`)).status, 200);
  const refused = connect(srv.vlessTcpPort!, '127.0.0.1');
  refused.on('error', () => {});
  refused.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echo.port, address: '127.0.0.1' }), Buffer.alloc(10)]));
  await new Promise((r) => refused.once('close', r));

  const { samples, types } = await scrape();
  assert.equal(types.get('vad_http_requests_total'), 'counter');
  assert.equal(types.get('vad_http_request_duration_seconds'), 'histogram');
  assert.equal(valueOf(samples, 'vad_http_requests_total', { method: 'GET', route: '/v2/zones', status: '200' }), 3);
  assert.equal(valueOf(samples, 'vad_http_requests_total', { method: 'GET', route: '/v2/sessions/:id', status: '404' }), 1);
  assert.equal(valueOf(samples, 'vad_http_request_duration_seconds_count', { method: 'GET', route: '/v2/zones', status: '200' }), 3);
  assert.ok(samples.every((s) => !(s.labels.route ?? '').includes('00000000')), 'no raw ids in route labels');
  assert.equal(valueOf(samples, 'vad_admission_refusals_total', { reason: 'paused' }), 1);
  assert.ok(valueOf(samples, 'vad_event_delivery_lag_seconds_count') >= 1, 'delivery lag observed');
  assert.equal(valueOf(samples, 'vad_event_stream_subscribers'), 0);
  assert.ok(valueOf(samples, 'vad_db_query_duration_seconds_count', { op: 'getSessionOf', outcome: 'ok' }) >= 1, 'store latency observed');
  // The process's own figures: resident memory, heap, and the event-loop delay since the previous scrape.
  assert.ok(valueOf(samples, 'process_resident_memory_bytes') > 10 * 1024 * 1024, 'resident memory');
  assert.ok(valueOf(samples, 'nodejs_heap_size_used_bytes') > 0, 'heap in use');
  // (sampled every 10 ms: a scrape 200 ms after the last one has samples; one right after it reads 0)
  await new Promise((r) => setTimeout(r, 200));
  const after = (await scrape()).samples;
  const [p50, p99, max] = ['p50', 'p99', 'max'].map((stat) => valueOf(after, 'nodejs_eventloop_lag_seconds', { stat }));
  assert.ok(p50 > 0 && p50 <= p99 && p99 <= max && max < 60, `event-loop delay p50 ${p50}, p99 ${p99}, max ${max} s`);
  // Histogram buckets are cumulative and end with +Inf equal to the count.
  const inf = pick(samples, 'vad_http_request_duration_seconds_bucket', { route: '/v2/zones', le: '+Inf' });
  assert.equal(inf.length, 1);
  assert.equal(inf[0].value, 3);
  // No token, secret or session id in the whole scrape.
  const text = await (await fetch(`${srv.origin}/metrics`)).text();
  assert.ok(!text.includes(owner) && !text.includes(id), 'no token or session id in the metrics');
});

test('protection: loopback only without a metrics token; with one, the token and nothing else', async () => {
  assert.equal(isLoopback('127.0.0.1'), true);
  assert.equal(isLoopback('127.8.9.10'), true);
  assert.equal(isLoopback('::1'), true);
  assert.equal(isLoopback('::ffff:127.0.0.1'), true);
  assert.equal(isLoopback('10.0.0.5'), false);
  assert.equal(isLoopback('::ffff:192.168.1.2'), false);
  assert.equal(isLoopback(undefined), false);

  const open = await makeServer();
  try {
    const here = await open.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
    assert.equal(here.statusCode, 200);
    const far = await open.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.0.0.5' });
    assert.equal(far.statusCode, 403);
    assert.equal(far.json().error.code, 'forbidden');
    assert.match(far.json().error.message, /metrics token/);
    // An API token is not a metrics credential.
    const api = await open.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.0.0.5', headers: { authorization: `Bearer ${open.owner}` } });
    assert.equal(api.statusCode, 403);
  } finally {
    await open.close();
  }

  const guarded = await makeServer({ metricsToken: 'scrape-secret-123' });
  try {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${guarded.owner}` }, { authorization: 'scrape-secret-123' }]) {
      const r = await guarded.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1', headers });
      assert.equal(r.statusCode, 401, JSON.stringify(headers));
      assert.equal(r.json().error.code, 'unauthorized');
    }
    const ok = await guarded.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.0.0.5', headers: { authorization: 'Bearer scrape-secret-123' } });
    assert.equal(ok.statusCode, 200);
    const parsed = parseMetrics(ok.body);
    // The refused scrapes were answered and counted like any request.
    assert.equal(valueOf(parsed.samples, 'vad_http_requests_total', { route: '/metrics', status: '401' }), 4);
    assert.ok(!ok.body.includes('scrape-secret-123'));
  } finally {
    await guarded.close();
  }
});

test('protection behind a reverse proxy on this machine: forwarding headers are refused without the metrics token', async () => {
  const srv = await listen({ trustProxy: ['loopback'] });
  const target = new URL(srv.origin);
  // A reverse proxy on the same host, as nginx would be: it connects from loopback and says for whom.
  const proxy = createHttpServer((req, res) => {
    const up = httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, 'x-forwarded-for': '203.0.113.50', 'x-forwarded-proto': 'https' } }, (r) => {
      res.writeHead(r.statusCode!, r.headers);
      r.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  try {
    const via = await fetch(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}/metrics`);
    assert.equal(via.status, 403);
    const body = (await via.json()) as { error: { code: string; message: string; details: unknown } };
    assert.equal(body.error.code, 'forbidden');
    assert.match(body.error.message, /proxy[\s\S]*metrics token/);
    for (const [h, v] of [['forwarded', 'for=203.0.113.50'], ['x-forwarded-for', '127.0.0.1'], ['x-real-ip', '127.0.0.1'], ['x-forwarded-host', 'example.com'], ['x-forwarded-proto', 'https']]) {
      const r = await fetch(`${srv.origin}/metrics`, { headers: { [h]: v } });
      assert.equal(r.status, 403, h);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'forbidden');
    }
    const direct = await fetch(`${srv.origin}/metrics`);
    assert.equal(direct.status, 200, 'a scrape on this machine without a proxy still works');
    await direct.arrayBuffer();
  } finally {
    proxy.close();
    await srv.stop();
  }
  const guarded = await listen({ metricsToken: 'scrape-secret-456' });
  try {
    const headers = { 'x-forwarded-for': '203.0.113.50', forwarded: 'for=203.0.113.50' };
    const refused = await fetch(`${guarded.origin}/metrics`, { headers });
    assert.equal(refused.status, 401);
    await refused.arrayBuffer();
    const ok = await fetch(`${guarded.origin}/metrics`, { headers: { ...headers, authorization: 'Bearer scrape-secret-456' } });
    assert.equal(ok.status, 200, 'with the metrics token a proxied scrape is fine');
    await ok.arrayBuffer();
  } finally {
    await guarded.stop();
  }
});

test('on PostgreSQL: a cluster instance serves its metrics, store latency of PostgreSQL calls included', async (t) => {
  const pg = await startPostgres(t);
  const url = await pg.createDatabase('metrics');
  const d = tempDir('vad-metrics-pg-');
  const pgSrv = await startServer({ dataDir: d, database: url, readCache: false, port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  try {
    const token = (await pgSrv.services.data.createToken('pgco', 'owner')).token;
    const made = await callApi(pgSrv.baseUrl, token, 'POST', '/sessions', { client_id: 'pg-metrics', zone: 'de-fra' });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    assert.equal((await callApi(pgSrv.baseUrl, token, 'GET', `/sessions/${made.json.id}`)).status, 200);
    const { samples } = await scrape(pgSrv.origin);
    assert.equal(valueOf(samples, 'vad_http_requests_total', { method: 'POST', route: '/v2/sessions', status: '201' }), 1);
    assert.ok(valueOf(samples, 'vad_db_query_duration_seconds_count', { op: 'getSessionStatusOf', outcome: 'ok' }) >= 1);
    assert.ok(valueOf(samples, 'vad_db_query_duration_seconds_sum', { op: 'getSessionStatusOf' }) > 0, 'a PostgreSQL round trip takes time');
    assert.equal(valueOf(samples, 'vad_read_cache_hits_total'), 0, 'no read cache with readCache false (serve --read-cache off)');
  } finally {
    await pgSrv.close();
    removeDir(d);
  }
});

test('on PostgreSQL with the read cache (the default): repeated status reads come from the cache, and a pause shows at once', async (t) => {
  const pg = await startPostgres(t);
  const url = await pg.createDatabase('metrics_cache');
  const d = tempDir('vad-metrics-pgc-');
  const pgSrv = await startServer({ dataDir: d, database: url, port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  try {
    const token = (await pgSrv.services.data.createToken('pgcache', 'owner')).token;
    const made = await callApi(pgSrv.baseUrl, token, 'POST', '/sessions', { client_id: 'pg-cache', zone: 'de-fra', reusable: true });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    const status = async () => (await callApi(pgSrv.baseUrl, token, 'GET', `/sessions/${made.json.id}/status`)).json;
    for (let i = 0; i < 5; i++) assert.equal((await status()).paused, false);
    assert.ok(valueOf((await scrape(pgSrv.origin)).samples, 'vad_read_cache_hits_total') >= 3, 'the repeated reads were hits');
    assert.equal((await callApi(pgSrv.baseUrl, token, 'PATCH', `/sessions/${made.json.id}/pause`)).status, 200);
    assert.equal((await status()).paused, true, 'the pause is read at once');
  } finally {
    await pgSrv.close();
    removeDir(d);
  }
});
