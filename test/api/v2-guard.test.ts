// Rate limiting per token in a fixed window: the three headers on every response, 429 with
// Retry-After, isolation between tokens, the event stream counting as one request.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, test } from 'node:test';
import { allRoutes, assertError, assertRateHeaders, auth, createSession, listen, makeServer, type TestServer, waitFor } from '../helpers/server.ts';

const MAX = 5;
const WINDOW_MS = 2000;

let s: TestServer;
before(async () => {
  s = await makeServer({ rateLimit: { max: MAX, windowMs: WINDOW_MS } });
});
after(async () => {
  await s.close();
});

test('every response carries the three headers with the right values, errors included', async () => {
  const t = await makeServer({ rateLimit: { max: 1000, windowMs: 60_000 } });
  try {
    const id = (await createSession(t.app, t.owner, { reusable: true })).id;
    const kinds = [
      { headers: auth(t.owner), url: '/v2/zones', status: 200 },
      { headers: {}, url: '/v2/zones', status: 401 },
      { headers: auth(t.owner), url: '/v2/nope', status: 404 },
      { headers: auth(t.owner), url: `/v2/sessions/${crypto.randomUUID()}/status`, status: 404 },
      { headers: auth(t.owner), url: '/v2/zones', method: 'DELETE', status: 405 },
      { headers: auth(t.agent), url: '/v2/customer/limits/global', status: 403 },
      { headers: auth(t.owner), url: '/v2/sessions?limit=0', status: 400 },
      { headers: { ...auth(t.owner), 'content-type': 'text/plain' }, url: '/v2/sessions', method: 'POST', payload: 'x', status: 415 },
      { headers: auth(t.owner), url: '/v2/openapi.json', status: 200 },
    ];
    for (const k of kinds) {
      const res = await t.app.inject({ method: (k.method ?? 'GET') as 'GET', url: k.url, headers: k.headers, ...(k.payload ? { payload: k.payload } : {}) });
      assert.equal(res.statusCode, k.status, `${k.url}: ${res.body}`);
      assertRateHeaders(res, 1000);
      assert.ok(Number(res.headers['x-ratelimit-remaining']) < 1000);
      const reset = Number(res.headers['x-ratelimit-reset']);
      assert.ok(reset >= 0 && reset <= 60, `reset ${reset} is seconds within the window`);
    }
    for (const r of allRoutes(id)) {
      const res = await t.app.inject({ method: r.method, url: r.url, headers: auth(t.owner), ...(r.body ? { payload: r.body as object } : {}) });
      assertRateHeaders(res, 1000);
    }
  } finally {
    await t.close();
  }
});

test('remaining counts down per token, then 429 rate_limited with Retry-After; the window resets', async () => {
  const token = s.services.sqlite!.store.createToken('rl-1', 'owner').token;
  const remaining: number[] = [];
  for (let i = 0; i < MAX; i++) {
    const res = await s.app.inject({ url: '/v2/zones', headers: auth(token) });
    assert.equal(res.statusCode, 200);
    assertRateHeaders(res, MAX);
    remaining.push(Number(res.headers['x-ratelimit-remaining']));
  }
  assert.deepEqual(remaining, [4, 3, 2, 1, 0]);
  for (let i = 0; i < 3; i++) {
    const res = await s.app.inject({ url: '/v2/zones', headers: auth(token) });
    const e = assertError(res, 429, 'rate_limited');
    assertRateHeaders(res, MAX);
    assert.equal(res.headers['x-ratelimit-remaining'], '0');
    const retry = Number(res.headers['retry-after']);
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= Math.ceil(WINDOW_MS / 1000), `Retry-After ${res.headers['retry-after']}`);
    assert.equal(typeof e.details, 'object');
  }
  // Every route is limited, including limits (owner) and errors.
  assertError(await s.app.inject({ url: '/v2/customer/limits/global', headers: auth(token) }), 429, 'rate_limited');
  assertError(await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: auth(token), payload: { client_id: 'a', zone: 'de-fra' } }), 429, 'rate_limited');
  // After the window, requests pass again.
  await waitFor(async () => (await s.app.inject({ url: '/v2/zones', headers: auth(token) })).statusCode === 200, WINDOW_MS + 2000, 'the window to reset');
});

test('tokens are counted separately: one exhausted token does not affect another', async () => {
  const a = s.services.sqlite!.store.createToken('rl-a', 'owner').token;
  const b = s.services.sqlite!.store.createToken('rl-a', 'agent').token;
  for (let i = 0; i < MAX; i++) assert.equal((await s.app.inject({ url: '/v2/zones', headers: auth(a) })).statusCode, 200);
  assertError(await s.app.inject({ url: '/v2/zones', headers: auth(a) }), 429, 'rate_limited');
  const res = await s.app.inject({ url: '/v2/zones', headers: auth(b) });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['x-ratelimit-remaining'], String(MAX - 1));
  // The header form does not matter: it is the same token.
  const bare = await s.app.inject({ url: '/v2/zones', headers: { authorization: b } });
  assert.equal(bare.headers['x-ratelimit-remaining'], String(MAX - 2));
});

test('made-up, malformed and revoked tokens share the per-address allowance', async () => {
  const t = await makeServer({ rateLimit: { max: MAX, windowMs: 60_000 } });
  try {
    const revoked = t.services.sqlite!.store.createToken('rl-r', 'owner').token;
    t.services.sqlite!.store.revokeToken(revoked);
    const kinds = [{}, { authorization: 'Bearer vad_madeup1' }, { authorization: 'Basic a b' }, auth(revoked), { authorization: 'vad_madeup2' }];
    for (let i = 0; i < MAX; i++) {
      const res = await t.app.inject({ url: '/v2/zones', headers: kinds[i % kinds.length] });
      assertError(res, 401, 'unauthorized');
      assert.equal(res.headers['x-ratelimit-remaining'], String(MAX - 1 - i));
    }
    assertError(await t.app.inject({ url: '/v2/zones', headers: { authorization: `Bearer vad_fresh_${Date.now()}` } }), 429, 'rate_limited');
    // A valid token keeps its own allowance.
    const ok = await t.app.inject({ url: '/v2/zones', headers: auth(t.owner) });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['x-ratelimit-remaining'], String(MAX - 1));
  } finally {
    await t.close();
  }
});

test('the event stream counts as one request however long it stays open, and is limited too', async () => {
  const srv = await listen({ rateLimit: { max: MAX, windowMs: 10_000 } });
  try {
    const token = srv.services.sqlite!.store.createToken('rl-sse', 'owner').token;
    const customerId = srv.services.sqlite!.store.findToken(token)!.customer_id;
    const open = () =>
      new Promise<{ status: number; headers: Record<string, unknown>; close(): void; firstChunk: Promise<string> }>((resolve, reject) => {
        const req = httpRequest(`${srv.baseUrl}/sessions/events`, { headers: auth(token) }, (res) => {
          const firstChunk = new Promise<string>((r) => res.once('data', (c: Buffer) => r(c.toString())));
          resolve({ status: res.statusCode ?? 0, headers: res.headers, close: () => req.destroy(), firstChunk });
        });
        req.on('error', reject);
        req.end();
      });
    const first = await open();
    assert.equal(first.status, 200);
    assertRateHeaders(first, MAX);
    assert.equal(first.headers['x-ratelimit-remaining'], String(MAX - 1));
    await first.firstChunk;
    for (let i = 0; i < 20; i++) srv.services.sqlite!.bus.publish({ customerId, sessionId: 'x', type: 'session_stats', duration: i, uploaded_bytes: 0, downloaded_bytes: 0 });
    const res = await fetch(`${srv.baseUrl}/zones`, { headers: auth(token) });
    assert.equal(res.headers.get('x-ratelimit-remaining'), String(MAX - 2), 'events delivered on the stream are not requests');
    const streams: { close(): void }[] = [first];
    for (let i = 0; i < MAX - 2; i++) {
      const st = await open();
      assert.equal(st.status, 200);
      streams.push(st);
    }
    const over = await open();
    assert.equal(over.status, 429);
    assert.match(String(over.headers['content-type']), /^text\/event-stream/);
    assert.ok(over.headers['retry-after']);
    assert.match(await over.firstChunk, /^data: \{"error":\{"code":"rate_limited"/);
    over.close();
    for (const st of streams) st.close();
  } finally {
    await srv.stop();
  }
});
