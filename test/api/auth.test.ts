// Authentication on every route, both header forms, revoked tokens, and tenancy.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { allRoutes, assertError, assertRateHeaders, auth, createSession, json, makeServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
let revoked: string;
let sessionId: string;
before(async () => {
  s = await makeServer();
  revoked = s.services.sqlite!.store.createToken('acme', 'owner').token;
  assert.ok(s.services.sqlite!.store.revokeToken(revoked));
  sessionId = (await createSession(s.app, s.owner, { reusable: true })).id;
});
after(async () => {
  await s.close();
});

describe('401 unauthorized', () => {
  const badHeaders: [string, Record<string, string>][] = [
    ['no header', {}],
    ['empty header', { authorization: '' }],
    ['scheme only', { authorization: 'Bearer' }],
    ['scheme and space', { authorization: 'Bearer ' }],
    ['Basic scheme', { authorization: 'Basic YWxhZGRpbjpvcGVuc2VzYW1l' }],
    ['two tokens', { authorization: 'Bearer a b' }],
    ['unknown token', { authorization: 'Bearer vad_doesnotexist' }],
    ['unknown bare token', { authorization: 'vad_doesnotexist' }],
    ['token with bad characters', { authorization: 'Bearer tok"en' }],
    ['very long token', { authorization: `Bearer ${'a'.repeat(4000)}` }],
  ];

  test('on every route, for every kind of bad credential, with the error record and rate headers', async () => {
    for (const route of allRoutes(sessionId)) {
      for (const [label, headers] of [...badHeaders, ['revoked token', auth(revoked)] as [string, Record<string, string>]]) {
        const res = await s.app.inject({ method: route.method, url: route.url, headers, ...(route.body ? { payload: route.body as object } : {}) });
        const e = assertError(res, 401, 'unauthorized');
        assert.ok(e.message.length > 0, `${route.method} ${route.url} ${label}`);
        assertRateHeaders(res);
      }
    }
  });

  test('the event stream answers 401 as text/event-stream with the error record in data:', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, auth(revoked)]) {
      const res = await s.app.inject({ url: '/v2/sessions/events', headers });
      assert.equal(res.statusCode, 401);
      assert.match(String(res.headers['content-type']), /^text\/event-stream/);
      assertRateHeaders(res);
      const m = /^data: (.*)\n\n$/.exec(res.body);
      assert.ok(m, res.body);
      const body = JSON.parse(m[1]);
      assert.equal(body.error.code, 'unauthorized');
      assert.deepEqual(body.error.details, {});
    }
  });

  test('a token is refused as soon as it is revoked', async () => {
    const t = s.services.sqlite!.store.createToken('acme', 'agent').token;
    assert.equal((await s.app.inject({ url: '/v2/zones', headers: auth(t) })).statusCode, 200);
    assert.equal((await s.app.inject({ url: '/v2/zones', headers: auth(t) })).statusCode, 200);
    assert.ok(s.services.sqlite!.store.revokeToken(t));
    assertError(await s.app.inject({ url: '/v2/zones', headers: auth(t) }), 401, 'unauthorized');
  });

  test('tokens are stored hashed, never in plain text', async () => {
    const rows = s.services.sqlite!.store.db.prepare('SELECT * FROM tokens').all() as Record<string, unknown>[];
    assert.ok(rows.length >= 4);
    const dump = JSON.stringify(rows);
    for (const t of [s.owner, s.agent, s.other, revoked]) assert.ok(!dump.includes(t), 'plain token stored');
  });
});

describe('both header forms', () => {
  test('Bearer (any case) and the bare token are accepted', async () => {
    const forms = [`Bearer ${s.owner}`, `bearer ${s.owner}`, `BEARER ${s.owner}`, `Bearer   ${s.owner}`, s.owner, `  ${s.owner}  `, `Bearer\t${s.owner}`];
    for (const authorization of forms) {
      const res = await s.app.inject({ url: '/v2/zones', headers: { authorization } });
      assert.equal(res.statusCode, 200, JSON.stringify(authorization));
      const st = await s.app.inject({ url: `/v2/sessions/${sessionId}/status`, headers: { authorization } });
      assert.equal(st.statusCode, 200);
    }
  });
});

describe('tenancy', () => {
  test("another customer's session answers 404 exactly like an unknown id", async () => {
    const mine = await createSession(s.app, s.owner, { client_id: 'private', reusable: true });
    const unknown = crypto.randomUUID();
    for (const [method, suffix] of [['GET', '/status'], ['GET', ''], ['PATCH', '/pause'], ['PATCH', '/resume']] as const) {
      const theirs = await s.app.inject({ method, url: `/v2/sessions/${mine.id}${suffix}`, headers: auth(s.other) });
      const none = await s.app.inject({ method, url: `/v2/sessions/${unknown}${suffix}`, headers: auth(s.other) });
      const e1 = assertError(theirs, 404, 'session_not_found');
      const e2 = assertError(none, 404, 'session_not_found');
      assert.deepEqual(e1, e2, 'indistinguishable from an unknown id');
    }
    // The failed pause by the other customer changed nothing.
    assert.equal(json(await s.app.inject({ url: `/v2/sessions/${mine.id}/status`, headers: auth(s.owner) })).paused, false);
  });

  test("a customer's list shows only its own sessions", async () => {
    const theirs = await createSession(s.app, s.other, { client_id: 'globex-client' });
    const mineList = json(await s.app.inject({ url: '/v2/sessions?limit=500', headers: auth(s.owner) }));
    assert.ok(!mineList.sessions.some((x: { id: string }) => x.id === theirs.id));
    assert.ok(mineList.sessions.length >= 1);
    const theirList = json(await s.app.inject({ url: '/v2/sessions?limit=500', headers: auth(s.other) }));
    assert.deepEqual(theirList.sessions.map((x: { id: string }) => x.id), [theirs.id]);
    const filtered = json(await s.app.inject({ url: '/v2/sessions?client_id=globex-client', headers: auth(s.owner) }));
    assert.equal(filtered.sessions.length, 0);
  });

  test('tokens of the same customer share sessions (owner and agent)', async () => {
    const made = await createSession(s.app, s.agent, { client_id: 'shared' });
    assert.equal((await s.app.inject({ url: `/v2/sessions/${made.id}/status`, headers: auth(s.owner) })).statusCode, 200);
  });
});
