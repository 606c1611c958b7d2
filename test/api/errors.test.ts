// The error record on every kind of failure: unknown routes, 405, 413, 415, malformed JSON, a
// database that cannot be written (a full disk), and a 500 that leaks nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertError, assertRateHeaders, auth, createSession, listen, makeServer, removeDir, type TestServer } from '../helpers/server.ts';

let s: TestServer;
before(async () => {
  s = await makeServer();
});
after(async () => {
  await s.close();
});

describe('unknown routes and methods', () => {
  test('404 not_found on unknown paths, with rate headers under /v2', async () => {
    for (const url of ['/v2/nope', '/v2/sessions/a/b/c', '/v2/customer/limits', '/v2/customer', '/v2', '/v1/zones', '/v2/zones/extra', '/v2/sessions/x/status/y']) {
      const res = await s.app.inject({ url, headers: auth(s.owner) });
      const e = assertError(res, 404, 'not_found');
      assert.deepEqual(e.details, {});
      if (url.startsWith('/v2/')) assertRateHeaders(res);
    }
    assertError(await s.app.inject({ url: '/nothing-here' }), 404, 'not_found');
  });

  test('an unknown route answers 404 even without a token', async () => {
    assertError(await s.app.inject({ url: '/v2/does-not-exist' }), 404, 'not_found');
  });

  test('the 404 message never repeats a session id in full', async () => {
    const id = crypto.randomUUID();
    const e = assertError(await s.app.inject({ url: `/v2/sessions/${id}/nothing`, headers: auth(s.owner) }), 404, 'not_found');
    assert.ok(!e.message.includes(id));
  });

  test('malformed URLs and over-long ids: 400 error record with rate headers, counted and limited', async () => {
    const t = await makeServer({ rateLimit: { max: 3, windowMs: 60_000 } });
    try {
      for (const url of ['/v2/sessions/%zz/status', `/v2/sessions/${'a'.repeat(3000)}`, '/v2/sessions/%E0%A4%A']) {
        const res = await t.app.inject({ url, headers: auth(t.owner) });
        assertError(res, 400, 'invalid_request');
        assertRateHeaders(res, 3);
      }
      const res = await t.app.inject({ url: '/v2/sessions/%zz/status', headers: auth(t.owner) });
      assertError(res, 429, 'rate_limited');
      assert.ok(Number(res.headers['retry-after']) >= 1);
    } finally {
      await t.close();
    }
  });

  test('405 method_not_allowed with an Allow header naming the methods of the path', async () => {
    const cases: [string, string, string[]][] = [
      ['PUT', '/v2/zones', ['GET']],
      ['POST', '/v2/zones', ['GET']],
      ['DELETE', '/v2/sessions', ['GET', 'POST']],
      ['PUT', '/v2/sessions', ['GET', 'POST']],
      ['POST', `/v2/sessions/${crypto.randomUUID()}/pause`, ['PATCH']],
      ['GET', `/v2/sessions/${crypto.randomUUID()}/resume`, ['PATCH']],
      ['DELETE', `/v2/sessions/${crypto.randomUUID()}/status`, ['GET']],
      ['POST', '/v2/sessions/events', ['GET']],
      ['PUT', '/v2/customer/limits/session', ['DELETE', 'GET', 'PATCH']],
    ];
    for (const [method, url, allowed] of cases) {
      const res = await s.app.inject({ method: method as 'PUT', url, headers: auth(s.owner) });
      const e = assertError(res, 405, 'method_not_allowed');
      const allow = String(res.headers.allow).split(/,\s*/);
      assert.deepEqual(allow.filter((m) => m !== 'HEAD').sort(), allowed, `${method} ${url}`);
      assert.deepEqual(e.details.allow, allow);
      assertRateHeaders(res);
    }
  });
});

describe('bodies', () => {
  test('413 payload_too_large over 64 KiB, on every route with a body', async () => {
    const big = JSON.stringify({ client_id: 'a', zone: 'de-fra', pad: 'x'.repeat(64 * 1024) });
    for (const url of ['/v2/sessions']) {
      assertError(await s.app.inject({ method: 'POST', url, headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload: big }), 413, 'payload_too_large');
    }
    for (const url of ['/v2/customer/limits/global', `/v2/sessions/${crypto.randomUUID()}/pause`]) {
      assertError(await s.app.inject({ method: 'PATCH', url, headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload: big }), 413, 'payload_too_large');
    }
  });

  test('413 over a real connection, for large and chunked bodies, answered before the socket closes', async () => {
    const srv = await listen();
    try {
      for (const size of [70 * 1024, 4 * 1024 * 1024]) {
        const res = await fetch(`${srv.baseUrl}/sessions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${srv.owner}`, 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: 'a', zone: 'de-fra', pad: 'x'.repeat(size) }),
        });
        assert.equal(res.status, 413);
        assert.ok(res.headers.get('x-ratelimit-limit'));
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'payload_too_large');
      }
      const chunked = new ReadableStream({
        start(c) {
          for (let i = 0; i < 100; i++) c.enqueue(new TextEncoder().encode('x'.repeat(1024)));
          c.close();
        },
      });
      const res = await fetch(`${srv.baseUrl}/customer/limits/global`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${srv.owner}`, 'content-type': 'application/json' },
        body: chunked,
        duplex: 'half',
      } as RequestInit);
      assert.equal(res.status, 413);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'payload_too_large');
    } finally {
      await srv.stop();
    }
  });

  test('a body of exactly 64 KiB is parsed (and then validated)', async () => {
    const base = JSON.stringify({ client_id: 'a', zone: 'de-fra', pad: '' });
    const body = JSON.stringify({ client_id: 'a', zone: 'de-fra', pad: 'x'.repeat(64 * 1024 - base.length) });
    assert.equal(Buffer.byteLength(body), 64 * 1024);
    const e = assertError(await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload: body }), 400, 'invalid_request');
    assert.deepEqual(e.details.unknown_fields, ['pad']);
  });

  test('415 unsupported_media_type for bodies that are not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/jsonx', 'text/json']) {
      const res = await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: { ...auth(s.owner), 'content-type': type }, payload: '{"client_id":"a","zone":"de-fra"}' });
      assertError(res, 415, 'unsupported_media_type');
      assertRateHeaders(res);
    }
  });

  test('JSON content types with parameters or +json suffix are accepted', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/vnd.api+json']) {
      const res = await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: { ...auth(s.owner), 'content-type': type }, payload: '{"client_id":"a","zone":"de-fra"}' });
      assert.equal(res.statusCode, 201, `${type}: ${res.body}`);
    }
  });

  test('400 invalid_request on malformed JSON', async () => {
    for (const payload of ['{', '{"client_id": "a",}', "{'client_id': 'a'}", '{"a":1}{"b":2}', 'nul', '\u0000', '{"client_id":"a","zone":"de-fra"', '"unterminated']) {
      const res = await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload });
      const e = assertError(res, 400, 'invalid_request');
      assert.equal(e.details.location, 'body', payload);
    }
  });

  test('duplicate keys and prototype keys do not pollute anything', async () => {
    const res = await s.app.inject({
      method: 'PATCH',
      url: '/v2/customer/limits/global',
      headers: { ...auth(s.owner), 'content-type': 'application/json' },
      payload: '{"__proto__": {"polluted": 1}, "downloaded_bytes": 1}',
    });
    assertError(res, 400, 'invalid_request');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    const dup = await s.app.inject({
      method: 'PATCH',
      url: '/v2/customer/limits/global',
      headers: { ...auth(s.owner), 'content-type': 'application/json' },
      payload: '{"downloaded_bytes": 1, "downloaded_bytes": 2}',
    });
    assert.equal(dup.statusCode, 200);
    assert.equal(JSON.parse(dup.body).downloaded_bytes, 2);
  });
});

describe('500 service_unavailable: the database cannot be written', () => {
  test('a full disk (SQLite at its size cap): creations answer why with Retry-After, nothing half-saved, reads answer, writes resume when space is back', async () => {
    const lines: string[] = [];
    const logger = { info() {}, warn() {}, debug() {}, error: (o: object | string, m?: string) => void lines.push(JSON.stringify(o) + (m ?? '')) };
    const t = await makeServer({ logger });
    try {
      await createSession(t.app, t.owner, { reusable: true });
      const db = t.services.sqlite!.store.db;
      // The file may not grow past what it holds now: SQLite answers SQLITE_FULL, as on a full disk.
      const { page_count } = db.prepare('PRAGMA page_count').get() as { page_count: number };
      db.exec(`PRAGMA max_page_count = ${page_count}`);
      let created = 1;
      let refused = 0;
      for (let i = 0; i < 2000 && refused < 20; i++) {
        const res = await t.app.inject({ method: 'POST', url: '/v2/sessions', headers: auth(t.owner), payload: { client_id: `c${i}`, zone: 'de-fra', reusable: true } });
        if (res.statusCode === 201) {
          created++;
          continue;
        }
        const e = assertError(res, 500, 'service_unavailable');
        assert.deepEqual(e.details, { reason: 'disk_full', retry_after: 10 });
        assert.equal(e.message, 'The database cannot be written: the disk holding it is full. Nothing of this request was saved; retry once the operator has fixed it.');
        assert.equal(res.headers['retry-after'], '10');
        refused++;
      }
      assert.equal(refused, 20, 'the cap was reached');
      // GET /v2/health (no token) tells a load balancer or service manager, until a write succeeds again.
      const health = await t.app.inject({ url: '/v2/health' });
      const h = assertError(health, 500, 'service_unavailable');
      assert.deepEqual(h.details, { reason: 'disk_full', retry_after: 5 });
      assert.match(h.message, /^The database refused a write \d+ s ago \(disk full\); the instance cannot save what it is asked to\.$/);
      assert.equal(health.headers['retry-after'], '5');
      const listed = await t.app.inject({ url: '/v2/sessions?limit=100', headers: auth(t.owner) });
      assert.equal(listed.statusCode, 200);
      assert.equal(JSON.parse(listed.body).sessions.length, Math.min(created, 100), 'every answered creation is there, no refused one');
      // Logged with the database's own words, without a stack, and not once per request.
      const logged = lines.filter((l) => l.includes('cannot be written'));
      assert.ok(logged.length >= 1 && logged.length < refused, `${logged.length} lines for ${refused} refusals`);
      assert.match(logged[0], /"cause":"database or disk is full"/);
      assert.doesNotMatch(logged[0], /stack/);

      db.exec('PRAGMA max_page_count = 1073741823');
      assert.equal((await t.app.inject({ method: 'POST', url: '/v2/sessions', headers: auth(t.owner), payload: { client_id: 'after', zone: 'de-fra' } })).statusCode, 201);
      assert.equal((await t.app.inject({ url: '/v2/health' })).statusCode, 200, 'a write succeeded: healthy again');
    } finally {
      await t.close();
    }
  });
});

describe('500 internal_error', () => {
  test('a failing database gives the error record, no stack, no paths, no SQL, and is logged', async () => {
    const lines: string[] = [];
    const logger = { info() {}, warn() {}, debug() {}, error: (o: object | string, m?: string) => void lines.push(JSON.stringify(o) + (m ?? '')) };
    const t = await makeServer({ logger });
    const id = (await createSession(t.app, t.owner, { reusable: true })).id;
    t.services.sqlite!.store.db.close();
    const requests = [
      { method: 'POST' as const, url: '/v2/sessions', payload: { client_id: 'a', zone: 'de-fra' } },
      { method: 'GET' as const, url: `/v2/sessions/${id}/status` },
      { method: 'PATCH' as const, url: `/v2/sessions/${id}/pause` },
      { method: 'GET' as const, url: '/v2/sessions' },
      { method: 'PATCH' as const, url: '/v2/customer/limits/client', payload: { max_sessions: 1 } },
    ];
    for (const r of requests) {
      // The token is cached for 2 s after its first use, so the request reaches the handler.
      const res = await t.app.inject({ ...r, headers: auth(t.owner) });
      if (res.statusCode !== 500) continue; // (a cache miss fails in the auth hook, also 500)
      const e = assertError(res, 500, 'internal_error');
      assert.deepEqual(e.details, {});
      assert.ok(!/\bat\s+\S+\s*\(|\.ts:\d+|\/work\/|node:internal|sqlite|database/i.test(res.body), `leak: ${res.body}`);
      assertRateHeaders(res);
    }
    const status = await t.app.inject({ url: `/v2/sessions/${id}/status`, headers: auth(t.owner) });
    assertError(status, 500, 'internal_error');
    assert.ok(lines.length >= 1, 'the failure is logged on the server side');
    // The server keeps answering after failures.
    assertError(await t.app.inject({ url: '/v2/zones' }), 401, 'unauthorized');
    await t.app.close().catch(() => {});
    removeDir(t.dataDir);
  });

  test('the event stream answers 500 as text/event-stream', async () => {
    const t = await makeServer();
    assert.equal((await t.app.inject({ url: '/v2/zones', headers: auth(t.owner) })).statusCode, 200);
    t.services.sqlite!.store.db.close();
    const res = await t.app.inject({ url: '/v2/sessions/events', headers: auth(t.owner) });
    assert.equal(res.statusCode, 500, res.body);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    const m = /^data: (.*)\n\n$/.exec(res.body);
    assert.ok(m, res.body);
    assert.equal(JSON.parse(m[1]).error.code, 'internal_error');
    assert.ok(!/\.ts:\d+|\/work\//.test(res.body));
    await t.app.close().catch(() => {});
    removeDir(t.dataDir);
  });
});
