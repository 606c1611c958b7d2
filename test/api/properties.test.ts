// Property-based tests: random and hostile bodies, headers, ids and query strings at every
// route. The answer is always a valid success or a well-formed error record with a 4xx status:
// never a 500, a crash or a hang; and the server keeps answering.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { assertErrorBody, assertRateHeaders, auth, createSession, listen, makeServer, type TestServer, waitFor } from '../helpers/server.ts';
import { openRaw } from '../helpers/sse.ts';

const RUNS = 200;
let s: TestServer;
let reusableId: string;
let plainId: string;

before(async () => {
  s = await makeServer({ rateLimit: { max: 1_000_000, windowMs: 60_000 } });
  reusableId = (await createSession(s.app, s.owner, { reusable: true })).id;
  plainId = (await createSession(s.app, s.owner)).id;
});
after(async () => {
  await s.close();
});

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT' | 'OPTIONS' | 'HEAD';

/** The answer is a success with the expected shape, or an error record with a 4xx status. */
function checkAnswer(res: LightMyRequestResponse, what: string): void {
  assert.ok(res.statusCode < 500, `${what} -> ${res.statusCode} ${res.body}`);
  assertRateHeaders(res);
  if (res.statusCode >= 400) {
    const ct = String(res.headers['content-type']);
    let body: unknown;
    if (ct.startsWith('text/event-stream')) {
      const m = /^data: (.*)\n\n$/.exec(res.body);
      assert.ok(m, `${what}: SSE error framing: ${res.body}`);
      body = JSON.parse(m[1]);
    } else {
      assert.match(ct, /^application\/json/, `${what}: ${ct}`);
      if (res.body === '') return; // HEAD
      body = JSON.parse(res.body);
    }
    assertErrorBody(body);
    return;
  }
  if (res.statusCode === 204) {
    assert.equal(res.body, '');
    return;
  }
  assert.ok([200, 201].includes(res.statusCode), `${what}: ${res.statusCode}`);
  if (res.body !== '') JSON.parse(res.body);
}

async function stillAlive(): Promise<void> {
  const res = await s.app.inject({ url: '/v2/zones', headers: auth(s.owner) });
  assert.equal(res.statusCode, 200);
}

// Hostile JSON values: deep nesting, huge numbers, unicode, prototype keys.
const hostileKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'client_id', 'zone', 'reusable', 'connection_type', 'downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed', 'max_sessions', 'max_reconnections', 'id', 'created_at', ''),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
);
const hostileScalar = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 2 ** 53, 2 ** 53 - 1, -(2 ** 53), 1e308, -1e308, 5e-324, 0.5, 'vless', 'de-fra', 'br-sao', '', '\u0000', '\ud800', '💥', 'a'.repeat(300), true, false, null),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.boolean(),
);
const hostileValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, hostileScalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(hostileKey, tie('value'), { maxKeys: 5 }),
})).value;

/** Mostly-valid bodies with one field changed, so validation deeper than the first check runs. */
const nearlyValidBody = fc.record(
  {
    client_id: fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:@-]{1,130}$/), hostileScalar),
    zone: fc.oneof(fc.constantFrom('de-fra', 'br-sao', 'au-syd', 'nope', 'DE-FRA'), hostileScalar),
    connection_type: fc.oneof(fc.constantFrom('vless', 'VLESS', 'vmess'), hostileScalar),
    reusable: fc.oneof(fc.boolean(), hostileScalar),
  },
  { requiredKeys: [] },
);
const limitsBody = fc.dictionary(
  fc.constantFrom('downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed', 'max_sessions', 'max_reconnections', 'other'),
  fc.oneof(fc.integer({ min: -5, max: 10 }), fc.constantFrom(2 ** 53 - 1, 2 ** 53, 1e21, null, 1.5, '1', -0), fc.nat()),
  { maxKeys: 4 },
);

/** Deeply nested arrays/objects, as text (JSON.stringify would do the same). */
const deepJson = fc.record({ depth: fc.integer({ min: 50, max: 5000 }), kind: fc.constantFrom('[', '{"a":') }).map(({ depth, kind }) =>
  kind === '[' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth),
);

const bodyText = fc.oneof(
  hostileValue.map((v) => JSON.stringify(v) ?? 'null'),
  nearlyValidBody.map((v) => JSON.stringify(v)),
  limitsBody.map((v) => JSON.stringify(v)),
  deepJson,
  fc.constantFrom('{"__proto__":{"admin":true},"client_id":"a","zone":"de-fra"}', '{"constructor":{"prototype":{"x":1}}}', '{"downloaded_bytes":1e999}', '{"a":1,"a":2}', '\ufeff{}', '{', '', ' ', 'null', '[]', '"x"', '0'),
  fc.string({ maxLength: 60 }),
);

const routeTemplates: { method: Method; path: (id: string) => string }[] = [
  { method: 'GET', path: () => '/v2/zones' },
  { method: 'POST', path: () => '/v2/sessions' },
  { method: 'GET', path: () => '/v2/sessions' },
  { method: 'GET', path: (id) => `/v2/sessions/${id}` },
  { method: 'GET', path: (id) => `/v2/sessions/${id}/status` },
  { method: 'PATCH', path: (id) => `/v2/sessions/${id}/pause` },
  { method: 'PATCH', path: (id) => `/v2/sessions/${id}/resume` },
  { method: 'GET', path: () => '/v2/server-info' },
  { method: 'GET', path: () => '/v2/openapi.json' },
  ...(['global', 'client', 'session'] as const).flatMap((scope) => [
    { method: 'GET' as Method, path: () => `/v2/customer/limits/${scope}` },
    { method: 'PATCH' as Method, path: () => `/v2/customer/limits/${scope}` },
    { method: 'DELETE' as Method, path: () => `/v2/customer/limits/${scope}` },
  ]),
];
const anyRoute = fc.constantFrom(...routeTemplates);

const idArb = fc.oneof(
  fc.constant('__REUSABLE__'),
  fc.constant('__PLAIN__'),
  fc.uuid(),
  fc.constantFrom('..', '.', '%2e%2e', '..%2F..%2Fzones', 'a%2Fb', '%2F', '%00', '%', '%zz', '%E0%A4%A', '%C0%AF', '~', 'events', 'status', '__proto__', 'constructor', ' ', '%20', '+', '%2B', 'a?b=c', 'a#b'),
  fc.string({ minLength: 1, maxLength: 30 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).map(encodeURIComponent),
  fc.integer({ min: 150, max: 3000 }).map((n) => 'a'.repeat(n)),
);
const resolveId = (id: string) => (id === '__REUSABLE__' ? reusableId : id === '__PLAIN__' ? plainId : id);

test('hostile bodies at every route with a body never give a 500', async () => {
  const bodyRoutes = routeTemplates.filter((r) => r.method === 'POST' || r.method === 'PATCH');
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...bodyRoutes), bodyText, fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/vnd.x+json'), async (route, body, type) => {
      const url = route.path(reusableId);
      const res = await s.app.inject({ method: route.method, url, headers: { ...auth(s.owner), 'content-type': type }, payload: body });
      checkAnswer(res, `${route.method} ${url} ${body.slice(0, 80)}`);
      if (route.method === 'POST' && res.statusCode === 201) {
        const created = JSON.parse(res.body);
        assert.equal(created.connection_type, 'vless');
        assert.match(created.client_id, /^[A-Za-z0-9._:@-]{1,128}$/);
      }
    }),
    { numRuns: RUNS },
  );
  assert.equal(({} as Record<string, unknown>).admin, undefined, 'no prototype pollution');
  assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'x'), false);
  await stillAlive();
});

test('random Authorization and Content-Type headers never give a 500', async () => {
  const authHeader = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom(`Bearer ${s?.owner ?? ''}`, 'Bearer', 'Bearer ', 'bearer  x', 'Basic abc', 'Token x', 'Bearer a b', 'Bearer \u0000', 'Bearer 💥', '\t', ','),
    fc.string({ maxLength: 40 }),
    fc.string({ maxLength: 40 }).map((t) => `Bearer ${t}`),
    fc.string({ unit: 'grapheme', maxLength: 10 }),
    fc.integer({ min: 500, max: 8000 }).map((n) => `Bearer ${'x'.repeat(n)}`),
  );
  const contentType = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/json;charset=latin1', 'APPLICATION/JSON', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/octet-stream', 'application/', '/', ';', 'application/json; x', 'application/json, text/plain', 'application/problem+json', 'image/png'),
    fc.string({ maxLength: 30 }),
  );
  await fc.assert(
    fc.asyncProperty(anyRoute, authHeader, contentType, fc.option(bodyText, { nil: undefined }), fc.boolean(), async (route, authorization, type, body, validToken) => {
      const headers: Record<string, string> = {};
      const a = validToken && authorization === undefined ? `Bearer ${s.owner}` : authorization;
      // Headers with characters HTTP forbids cannot be sent at all; skip those.
      if (a !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(a)) headers.authorization = a;
      if (type !== undefined && /^[\t\x20-\x7e]*$/.test(type)) headers['content-type'] = type;
      const url = route.path(reusableId);
      const res = await s.app.inject({ method: route.method, url, headers, ...(body !== undefined && route.method !== 'GET' && route.method !== 'DELETE' ? { payload: body } : {}) });
      checkAnswer(res, `${route.method} ${url} auth=${JSON.stringify(a)?.slice(0, 40)} type=${type}`);
      if (!headers.authorization && route.path('') !== '/v2/openapi.json') assert.equal(res.statusCode, 401);
    }),
    { numRuns: RUNS },
  );
  await stillAlive();
});

test('random path ids (encoded slashes, dots, long strings, unicode) never give a 500', async () => {
  const idRoutes = routeTemplates.filter((r) => r.path('ID').includes('ID'));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...idRoutes), idArb, fc.constantFrom(() => s.owner, () => s.agent, () => s.other), async (route, rawId, who) => {
      const id = resolveId(rawId);
      const url = route.path(id);
      if (/^\/v2\/sessions\/(events|%65vents)\/?$/i.test(url)) return; // the event stream stays open (tested elsewhere)
      const res = await s.app.inject({ method: route.method, url, headers: auth(who()) });
      checkAnswer(res, `${route.method} ${url.slice(0, 120)}`);
      if (res.statusCode === 200 && url.endsWith('/status')) assert.equal(typeof JSON.parse(res.body).status, 'string');
      if (who() === s.other && (id === reusableId || id === plainId)) assert.equal(res.statusCode, 404, 'another customer never sees the session');
    }),
    { numRuns: RUNS },
  );
  await stillAlive();
});

test('random query strings on every route (and the event stream) never give a 500', async () => {
  const key = fc.oneof(fc.constantFrom('client_id', 'status', 'zone', 'limit', 'cursor', 'session_id', 'event_type', 'last_event_id', '__proto__', 'constructor', '', 'a[b]', 'a[]'), fc.string({ maxLength: 8 }));
  const value = fc.oneof(
    fc.constantFrom('', '0', '-1', '1', '500', '501', '1e3', '0x10', 'NaN', 'created', 'ended', 'session_start', 'de-fra', 'MA', 'AAAA', '%', '%zz', '%00', '99999999999999999999', '[]', '{}'),
    fc.string({ maxLength: 20 }),
    fc.integer().map(String),
  );
  const qs = fc.array(fc.tuple(key, value, fc.boolean()), { maxLength: 6 }).map((pairs) =>
    pairs.map(([k, v, raw]) => `${raw ? k : encodeURIComponent(k)}=${raw ? v : encodeURIComponent(v)}`).join('&'),
  );
  const routes = [...routeTemplates.filter((r) => r.method === 'GET'), { method: 'GET' as Method, path: () => '/v2/sessions/events' }];
  const live = await listen({ rateLimit: { max: 1_000_000, windowMs: 60_000 } });
  after(() => live.stop());
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...routes), qs, fc.option(fc.oneof(fc.constantFrom('abc', '-1', '1e3', '', ' 5', '99999999999999999'), fc.nat().map(String)), { nil: undefined }), async (route, query, lastEventId) => {
      const url = `${route.path(reusableId)}?${query}`;
      if (url.startsWith('/v2/sessions/events')) {
        // A successful stream stays open: read its first bytes on a real connection, then close.
        const headers: Record<string, string> = { ...auth(live.owner) };
        if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
        const st = await openRaw(`${live.origin}${url}`, headers);
        try {
          await Promise.race([st.ended, waitFor(() => st.text().includes('\n\n'), 5000, 'first frame')]);
          assert.ok(st.status < 500, `${url} -> ${st.status}`);
          if (st.status === 200) assert.ok(st.text().startsWith('retry: '), st.text().slice(0, 40));
          else {
            assert.equal(st.status, 400, `${url}: ${st.text()}`);
            const m = /^data: (.*)\n\n$/.exec(st.text());
            assert.ok(m, st.text());
            assertErrorBody(JSON.parse(m[1]));
          }
        } finally {
          st.close();
        }
        return;
      }
      const res = await s.app.inject({ method: 'GET', url, headers: auth(s.owner) });
      checkAnswer(res, url);
      if (res.statusCode === 200 && route.path('') === '/v2/sessions') {
        const body = JSON.parse(res.body);
        assert.ok(Array.isArray(body.sessions));
        assert.ok(body.next_cursor === null || typeof body.next_cursor === 'string');
      }
    }),
    { numRuns: RUNS },
  );
  await stillAlive();
});

test('random methods and paths under /v2 answer with the error record, never a 500', async () => {
  const segment = fc.oneof(
    fc.constantFrom('v2', 'sessions', 'zones', 'customer', 'limits', 'global', 'events', 'status', 'pause', 'resume', '..', '.', '%2F', '%2e', '', 'openapi.json', '%zz'),
    fc.string({ maxLength: 10 }).map(encodeURIComponent),
  );
  const path = fc.array(segment, { minLength: 0, maxLength: 6 }).map((segs) => '/v2/' + segs.join('/'));
  const method = fc.constantFrom<Method>('GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS', 'HEAD');
  await fc.assert(
    fc.asyncProperty(method, path, async (m, p) => {
      if (/\/sessions\/events\/?$/.test(p.split('?')[0]) && m === 'GET') return; // an open stream
      const res = await s.app.inject({ method: m, url: p, headers: auth(s.owner), ...(m === 'POST' || m === 'PATCH' ? { payload: {} } : {}) });
      assert.ok(res.statusCode < 500, `${m} ${p} -> ${res.statusCode} ${res.body}`);
      if (res.statusCode >= 400 && m !== 'HEAD') {
        assert.match(String(res.headers['content-type']), /^(application\/json|text\/event-stream)/, `${m} ${p}`);
        if (String(res.headers['content-type']).startsWith('application/json')) assertErrorBody(JSON.parse(res.body));
      }
    }),
    { numRuns: RUNS },
  );
  await stillAlive();
});

test('random sequences of pause/resume keep the documented state machine', async () => {
  await fc.assert(
    fc.asyncProperty(fc.boolean(), fc.array(fc.constantFrom<'pause' | 'resume'>('pause', 'resume'), { minLength: 1, maxLength: 12 }), async (reusable, actions) => {
      const id = (await createSession(s.app, s.owner, { reusable })).id;
      let paused = false;
      for (const a of actions) {
        const res = await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${id}/${a}`, headers: auth(s.owner) });
        if (!reusable) {
          assert.equal(res.statusCode, 400);
          assert.equal(JSON.parse(res.body).error.code, 'session_not_reusable');
          continue;
        }
        if (a === 'pause' && paused) assert.equal(JSON.parse(res.body).error.code, 'session_already_paused');
        else if (a === 'resume' && !paused) assert.equal(JSON.parse(res.body).error.code, 'session_not_paused');
        else {
          assert.equal(res.statusCode, 200);
          paused = a === 'pause';
          assert.deepEqual(JSON.parse(res.body), { session_id: id, paused });
        }
      }
      const st = JSON.parse((await s.app.inject({ url: `/v2/sessions/${id}/status`, headers: auth(s.owner) })).body);
      assert.equal(st.paused, paused);
    }),
    { numRuns: 100 },
  );
});

test('random limits PATCH sequences merge exactly like a model', async () => {
  const t = await makeServer();
  try {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('patch' as const), body: fc.dictionary(fc.constantFrom('downloaded_bytes', 'uploaded_bytes', 'download_speed', 'max_sessions'), fc.oneof(fc.nat(1000).map((n) => n + 1), fc.constant(null)), { minKeys: 1, maxKeys: 3 }) }),
      fc.record({ kind: fc.constant('delete' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 10 }), async (ops) => {
        await t.app.inject({ method: 'DELETE', url: '/v2/customer/limits/client', headers: auth(t.owner) });
        let model: Record<string, number> | undefined;
        for (const o of ops) {
          if (o.kind === 'delete') {
            const res = await t.app.inject({ method: 'DELETE', url: '/v2/customer/limits/client', headers: auth(t.owner) });
            assert.equal(res.statusCode, model ? 204 : 404);
            model = undefined;
          } else {
            const res = await t.app.inject({ method: 'PATCH', url: '/v2/customer/limits/client', headers: auth(t.owner), payload: o.body });
            assert.equal(res.statusCode, 200, res.body);
            model = { ...(model ?? {}) };
            for (const [k, v] of Object.entries(o.body)) {
              if (v === null) delete model[k];
              else model[k] = v;
            }
            const { id, created_at, updated_at, ...fields } = JSON.parse(res.body);
            assert.ok(id && created_at && updated_at);
            assert.deepEqual(fields, model);
          }
        }
        const res = await t.app.inject({ url: '/v2/customer/limits/client', headers: auth(t.owner) });
        if (model === undefined) assert.equal(res.statusCode, 404);
        else {
          const { id: _i, created_at: _c, updated_at: _u, ...fields } = JSON.parse(res.body);
          assert.deepEqual(fields, model);
        }
      }),
      { numRuns: 100 },
    );
  } finally {
    await t.close();
  }
});
