// Session creation, status, pause/resume and the session extensions (routes/sessions.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertError, auth, createSession, ISO_MS_Z, json, makeServer, type TestServer, UUID_V4 } from '../helpers/server.ts';

let s: TestServer;
before(async () => {
  s = await makeServer();
});
after(async () => {
  await s.close();
});

const post = (body: unknown, token = s.owner) =>
  s.app.inject({ method: 'POST', url: '/v2/sessions', headers: auth(token), payload: body as object });

describe('POST /sessions', () => {
  test('201 with the whole Session and a configuration a VLESS client can use', async () => {
    const res = await post({ client_id: 'alice', zone: 'de-fra', connection_type: 'vless', reusable: true });
    assert.equal(res.statusCode, 201, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const b = json(res);
    assert.match(b.id, UUID_V4);
    assert.equal(b.connection_type, 'vless');
    assert.equal(b.zone, 'de-fra');
    assert.equal(b.reusable, true);
    assert.match(b.created_at, ISO_MS_Z);
    assert.ok(Math.abs(Date.parse(b.created_at) - Date.now()) < 60_000);
    assert.equal(b.client_id, 'alice');
    assert.equal(b.status, 'created');
    assert.equal(b.paused, false);
    assert.equal(b.duration, 0);
    assert.equal(b.uploaded_bytes, 0);
    assert.equal(b.downloaded_bytes, 0);
    assert.equal('node' in b, false, 'carried by this process (local): no node named');
    assert.deepEqual(b.configuration, {
      protocol: 'vless',
      address: '127.0.0.1',
      port: 8787,
      id: b.id,
      encryption: 'none',
      network: 'ws',
      security: 'none',
      path: '/vless',
    });
    assert.equal(typeof b.configuration_link, 'string');
  });

  test('configuration_link is the standard share link, every part percent-encoded', async () => {
    const b = await createSession(s.app, s.owner, { client_id: 'bob.smith@example:1', zone: 'us-nyc' });
    const link: string = b.configuration_link;
    assert.match(link, /^vless:\/\/[0-9a-f-]{36}@127\.0\.0\.1:8787\?encryption=none&security=none&type=ws&path=%2Fvless#/);
    const u = new URL(link);
    assert.equal(u.protocol, 'vless:');
    assert.equal(u.username, b.id);
    assert.equal(u.password, '');
    assert.equal(u.hostname, '127.0.0.1');
    assert.equal(u.port, '8787');
    assert.equal(u.searchParams.get('encryption'), 'none');
    assert.equal(u.searchParams.get('security'), 'none');
    assert.equal(u.searchParams.get('type'), 'ws');
    assert.equal(u.searchParams.get('path'), '/vless');
    assert.equal(u.search, '?encryption=none&security=none&type=ws&path=%2Fvless');
    const remark = link.slice(link.indexOf('#') + 1);
    assert.ok(!remark.includes('+'), 'a space is never +');
    assert.ok(!remark.includes(' '));
    assert.ok(remark.includes('%20'), 'the remark "zone client" has its space as %20');
    assert.equal(decodeURIComponent(remark), 'us-nyc bob.smith@example:1');
    assert.equal(remark, encodeURIComponent('us-nyc bob.smith@example:1'), '@ and : are encoded in the remark');
    assert.equal(decodeURIComponent(u.hash.slice(1)), 'us-nyc bob.smith@example:1');
  });

  test('the configured public host and port (IPv6 too) are what the configuration and link carry', async () => {
    for (const [publicHost, shown] of [['vpn.example.com', 'vpn.example.com'], ['2001:db8::7', '[2001:db8::7]']] as const) {
      const t = await makeServer({ publicHost, publicPort: 443 });
      try {
        const b = await createSession(t.app, t.owner, { client_id: 'far-away' });
        assert.equal(b.configuration.address, publicHost);
        assert.equal(b.configuration.port, 443);
        const u = new URL(b.configuration_link);
        assert.equal(u.hostname, shown);
        assert.equal(u.port, '443');
      } finally {
        await t.close();
      }
    }
  });

  test('connection_type defaults to vless, reusable to false', async () => {
    const b = await createSession(s.app, s.owner, { client_id: 'defaults', zone: 'nl-ams' });
    assert.equal(b.connection_type, 'vless');
    assert.equal(b.reusable, false);
    assert.equal(b.zone, 'nl-ams');
  });

  test('ids are unique', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await createSession(s.app, s.owner, { client_id: 'uniq' })).id);
    assert.equal(ids.size, 20);
  });

  test('the client_id alphabet and its length bounds', async () => {
    for (const ok of ['a', 'A-Z.a_z:0@9', 'x'.repeat(128)]) {
      const res = await post({ client_id: ok, zone: 'de-fra' });
      assert.equal(res.statusCode, 201, `${ok}: ${res.body}`);
      assert.equal(json(res).client_id, ok);
    }
    for (const bad of ['', 'x'.repeat(129), 'with space', 'slash/', 'é', 'a+b', 'semi;colon', '<script>', 'a\nb', 'a#b', 'ü']) {
      const e = assertError(await post({ client_id: bad, zone: 'de-fra' }), 400, 'invalid_request');
      assert.equal(e.details.location, 'body');
      assert.deepEqual((e.details.fields as { field: string }[]).map((f) => f.field), ['client_id'], bad);
    }
  });

  test('400 when a required field is missing, naming it', async () => {
    let e = assertError(await post({ zone: 'de-fra' }), 400, 'invalid_request');
    assert.deepEqual(e.details.fields, [{ field: 'client_id', problem: 'is required' }]);
    e = assertError(await post({ client_id: 'a' }), 400, 'invalid_request');
    assert.deepEqual(e.details.fields, [{ field: 'zone', problem: 'is required' }]);
    e = assertError(await post({}), 400, 'invalid_request');
    assert.deepEqual((e.details.fields as { field: string }[]).map((f) => f.field).sort(), ['client_id', 'zone']);
  });

  test('400 on wrong types, naming each field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ client_id: 5, zone: 'de-fra' }, 'client_id'],
      [{ client_id: 'a', zone: 7 }, 'zone'],
      [{ client_id: 'a', zone: 'de-fra', reusable: 'true' }, 'reusable'],
      [{ client_id: 'a', zone: 'de-fra', reusable: 1 }, 'reusable'],
      [{ client_id: 'a', zone: 'de-fra', connection_type: 5 }, 'connection_type'],
      [{ client_id: ['a'], zone: 'de-fra' }, 'client_id'],
      [{ client_id: null, zone: 'de-fra' }, 'client_id'],
      [{ client_id: 'a', zone: { code: 'de-fra' } }, 'zone'],
    ];
    for (const [body, field] of cases) {
      const e = assertError(await post(body), 400, 'invalid_request');
      assert.ok((e.details.fields as { field: string }[]).some((f) => f.field === field), `${JSON.stringify(body)} -> ${JSON.stringify(e)}`);
    }
    const e = assertError(await post({ client_id: 5, zone: 'de-fra', reusable: 'x' }), 400, 'invalid_request');
    assert.equal((e.details.fields as unknown[]).length, 2, 'all problems are reported');
  });

  test('400 on unknown fields, with details naming them', async () => {
    const e = assertError(await post({ client_id: 'a', zone: 'de-fra', colour: 'blue', extra: 1 }), 400, 'invalid_request');
    assert.deepEqual((e.details.unknown_fields as string[]).sort(), ['colour', 'extra']);
    assert.match(e.message, /colour/);
  });

  test('400 on a body that is not an object', async () => {
    for (const payload of ['[]', 'null', '"text"', '42', 'true']) {
      const res = await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload });
      assertError(res, 400, 'invalid_request');
    }
    assertError(await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: auth(s.owner) }), 400, 'invalid_request');
  });

  test('404 zone_not_found for an unknown zone', async () => {
    for (const zone of ['xx-nowhere', 'DE-FRA', 'z', '']) {
      const e = assertError(await post({ client_id: 'a', zone }), 404, 'zone_not_found');
      assert.equal(e.details.zone, zone);
    }
  });

  test('422 zone_unavailable when the zone has no active nodes', async () => {
    for (const zone of ['br-sao', 'au-syd']) {
      const e = assertError(await post({ client_id: 'a', zone }), 422, 'zone_unavailable');
      assert.equal(e.details.zone, zone);
    }
  });

  test('422 unsupported_connection_type for a well-formed type other than vless', async () => {
    for (const t of ['wireguard', 'VLESS', 'vmess', '']) {
      const e = assertError(await post({ client_id: 'a', zone: 'de-fra', connection_type: t }), 422, 'unsupported_connection_type');
      assert.equal(e.details.connection_type, t);
    }
  });

  test('failed creations leave no session behind', async () => {
    const before = json(await s.app.inject({ url: '/v2/sessions?client_id=ghost', headers: auth(s.owner) }));
    await post({ client_id: 'ghost', zone: 'br-sao' });
    await post({ client_id: 'ghost', zone: 'nope' });
    await post({ client_id: 'ghost', zone: 'de-fra', connection_type: 'x' });
    const afterList = json(await s.app.inject({ url: '/v2/sessions?client_id=ghost', headers: auth(s.owner) }));
    assert.equal(before.sessions.length, 0);
    assert.equal(afterList.sessions.length, 0);
  });
});

describe('GET /sessions/{id}/status', () => {
  test('200 with the status fields of a new session', async () => {
    const b = await createSession(s.app, s.owner, { client_id: 'status-client' });
    const res = await s.app.inject({ url: `/v2/sessions/${b.id}/status`, headers: auth(s.owner) });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res), { client_id: 'status-client', status: 'created', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0, paused: false });
  });

  test('the agent role may read status', async () => {
    const b = await createSession(s.app, s.agent, { client_id: 'agent-made' });
    const res = await s.app.inject({ url: `/v2/sessions/${b.id}/status`, headers: auth(s.agent) });
    assert.equal(res.statusCode, 200);
    assert.equal(json(res).client_id, 'agent-made');
  });

  test('404 session_not_found for unknown ids, well-formed or not', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', crypto.randomUUID(), 'nope', 'a%2Fb', '..%2F..%2Fzones', 'x'.repeat(200)]) {
      assertError(await s.app.inject({ url: `/v2/sessions/${id}/status`, headers: auth(s.owner) }), 404, 'session_not_found');
    }
  });

  test('400 for an id that is too long or malformed in the URL', async () => {
    assertError(await s.app.inject({ url: `/v2/sessions/${'x'.repeat(201)}/status`, headers: auth(s.owner) }), 400, 'invalid_request');
    assertError(await s.app.inject({ url: `/v2/sessions/${'x'.repeat(5000)}/status`, headers: auth(s.owner) }), 400, 'invalid_request');
    assertError(await s.app.inject({ url: `/v2/sessions/%zz/status`, headers: auth(s.owner) }), 400, 'invalid_request');
    assertError(await s.app.inject({ url: `/v2/sessions/%E0%A4%A/status`, headers: auth(s.owner) }), 400, 'invalid_request');
  });
});

describe('PATCH /sessions/{id}/pause and /resume', () => {
  const patch = (id: string, action: 'pause' | 'resume', token = s.owner) =>
    s.app.inject({ method: 'PATCH', url: `/v2/sessions/${id}/${action}`, headers: auth(token) });

  test('pause then resume a reusable session, and the flag shows in status', async () => {
    const b = await createSession(s.app, s.owner, { reusable: true });
    let res = await patch(b.id, 'pause');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json(res), { session_id: b.id, paused: true });
    assert.equal(json(await s.app.inject({ url: `/v2/sessions/${b.id}/status`, headers: auth(s.owner) })).paused, true);
    assert.equal(json(await s.app.inject({ url: `/v2/sessions/${b.id}`, headers: auth(s.owner) })).paused, true);
    res = await patch(b.id, 'resume');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json(res), { session_id: b.id, paused: false });
    assert.equal(json(await s.app.inject({ url: `/v2/sessions/${b.id}/status`, headers: auth(s.owner) })).paused, false);
    // And again: the cycle repeats.
    assert.equal((await patch(b.id, 'pause')).statusCode, 200);
    assert.equal((await patch(b.id, 'resume')).statusCode, 200);
  });

  test('an agent may pause and resume', async () => {
    const b = await createSession(s.app, s.agent, { reusable: true });
    assert.equal((await patch(b.id, 'pause', s.agent)).statusCode, 200);
    assert.equal((await patch(b.id, 'resume', s.agent)).statusCode, 200);
  });

  test('an empty JSON body or {} is accepted', async () => {
    const b = await createSession(s.app, s.owner, { reusable: true });
    let res = await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${b.id}/pause`, headers: { ...auth(s.owner), 'content-type': 'application/json' } });
    assert.equal(res.statusCode, 200, res.body);
    res = await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${b.id}/resume`, headers: auth(s.owner), payload: {} });
    assert.equal(res.statusCode, 200, res.body);
  });

  test('a body with fields, or one that is not an object, is 400 and changes nothing', async () => {
    const b = await createSession(s.app, s.owner, { reusable: true });
    for (const action of ['pause', 'resume']) {
      const e = assertError(await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${b.id}/${action}`, headers: auth(s.owner), payload: { paused: true } }), 400, 'invalid_request');
      assert.deepEqual(e.details.unknown_fields, ['paused']);
      for (const payload of ['[]', '"x"', '5']) {
        const res = await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${b.id}/${action}`, headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload });
        assertError(res, 400, 'invalid_request');
      }
    }
    assert.equal(json(await s.app.inject({ url: `/v2/sessions/${b.id}/status`, headers: auth(s.owner) })).paused, false);
    const ok = await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${b.id}/pause`, headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload: 'null' });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('400 session_not_reusable on pause and on resume of a non-reusable session', async () => {
    const b = await createSession(s.app, s.owner, { reusable: false });
    let e = assertError(await patch(b.id, 'pause'), 400, 'session_not_reusable');
    assert.equal(e.details.session_id, b.id);
    e = assertError(await patch(b.id, 'resume'), 400, 'session_not_reusable');
    assert.equal(e.details.session_id, b.id);
    assert.equal(json(await s.app.inject({ url: `/v2/sessions/${b.id}/status`, headers: auth(s.owner) })).paused, false);
  });

  test('400 session_already_paused and session_not_paused', async () => {
    const b = await createSession(s.app, s.owner, { reusable: true });
    assertError(await patch(b.id, 'resume'), 400, 'session_not_paused');
    assert.equal((await patch(b.id, 'pause')).statusCode, 200);
    assertError(await patch(b.id, 'pause'), 400, 'session_already_paused');
    assert.equal((await patch(b.id, 'resume')).statusCode, 200);
    assertError(await patch(b.id, 'resume'), 400, 'session_not_paused');
  });

  test('400 session_ended for an ended session', async () => {
    const b = await createSession(s.app, s.owner, { reusable: true });
    s.services.sqlite!.store.saveRuntime(b.id, { status: 'ended' });
    assertError(await patch(b.id, 'pause'), 400, 'session_ended');
    assertError(await patch(b.id, 'resume'), 400, 'session_ended');
  });

  test('404 session_not_found on unknown ids', async () => {
    for (const action of ['pause', 'resume'] as const) {
      assertError(await patch(crypto.randomUUID(), action), 404, 'session_not_found');
      assertError(await patch('nope', action), 404, 'session_not_found');
    }
  });

  test('wrong bodies: 415 for text, 400 for malformed JSON', async () => {
    const b = await createSession(s.app, s.owner, { reusable: true });
    assertError(
      await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${b.id}/pause`, headers: { ...auth(s.owner), 'content-type': 'text/plain' }, payload: 'x' }),
      415,
      'unsupported_media_type',
    );
    assertError(
      await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${b.id}/pause`, headers: { ...auth(s.owner), 'content-type': 'application/json' }, payload: '{' }),
      400,
      'invalid_request',
    );
    assert.equal(json(await s.app.inject({ url: `/v2/sessions/${b.id}/status`, headers: auth(s.owner) })).paused, false);
  });
});

describe('extension: GET /sessions and GET /sessions/{id}', () => {
  let t: TestServer;
  const created: { id: string; client_id: string; zone: string }[] = [];
  before(async () => {
    t = await makeServer();
    const plan: [string, string][] = [];
    for (let i = 0; i < 23; i++) plan.push([i % 3 === 0 ? 'c-x' : 'c-y', i % 2 === 0 ? 'de-fra' : 'jp-tyo']);
    for (const [client_id, zone] of plan) created.push(await createSession(t.app, t.owner, { client_id, zone }) as never);
    t.services.sqlite!.store.saveRuntime(created[0].id, { status: 'ended' });
    t.services.sqlite!.store.saveRuntime(created[1].id, { status: 'active' });
  });
  after(async () => {
    await t.close();
  });
  const list = async (qs: string) => {
    const res = await t.app.inject({ url: `/v2/sessions${qs}`, headers: auth(t.owner) });
    assert.equal(res.statusCode, 200, res.body);
    return json(res) as { sessions: { id: string; client_id: string; zone: string; status: string; configuration_link: string }[]; next_cursor: string | null };
  };

  test('lists newest first with full Session objects', async () => {
    const b = await list('');
    assert.equal(b.sessions.length, 23);
    assert.equal(b.next_cursor, null);
    assert.deepEqual(b.sessions.map((x) => x.id), created.map((c) => c.id).reverse());
    assert.match(b.sessions[0].configuration_link, /^vless:\/\//);
  });

  test('filters client_id, status and zone, alone and together', async () => {
    const byClient = await list('?client_id=c-x');
    assert.deepEqual(byClient.sessions.map((x) => x.id).sort(), created.filter((c) => c.client_id === 'c-x').map((c) => c.id).sort());
    const byZone = await list('?zone=jp-tyo');
    assert.deepEqual(byZone.sessions.map((x) => x.id).sort(), created.filter((c) => c.zone === 'jp-tyo').map((c) => c.id).sort());
    const ended = await list('?status=ended');
    assert.deepEqual(ended.sessions.map((x) => x.id), [created[0].id]);
    const active = await list('?status=active');
    assert.deepEqual(active.sessions.map((x) => x.id), [created[1].id]);
    assert.equal((await list('?status=created')).sessions.length, 21);
    const both = await list('?client_id=c-x&zone=de-fra');
    assert.deepEqual(both.sessions.map((x) => x.id).sort(), created.filter((c) => c.client_id === 'c-x' && c.zone === 'de-fra').map((c) => c.id).sort());
    assert.equal((await list('?client_id=nobody')).sessions.length, 0);
  });

  test('400 on bad filters and query parameters', async () => {
    for (const qs of ['?status=paused', '?limit=0', '?limit=501', '?limit=-1', '?limit=abc', '?limit=1.5', '?cursor=%21%21', '?cursor=' + 'a'.repeat(65), '?unknown=1', '?cursor=MA']) {
      assertError(await t.app.inject({ url: `/v2/sessions${qs}`, headers: auth(t.owner) }), 400, 'invalid_request');
    }
  });

  test('limit bounds 1 and 500 are accepted', async () => {
    const one = await list('?limit=1');
    assert.equal(one.sessions.length, 1);
    assert.equal(typeof one.next_cursor, 'string');
    const all = await list('?limit=500');
    assert.equal(all.sessions.length, 23);
    assert.equal(all.next_cursor, null);
  });

  test('cursor pagination visits every session once, in order', async () => {
    for (const [size, filter, expected] of [
      [5, '', created],
      [1, '', created],
      [4, '&client_id=c-y', created.filter((c) => c.client_id === 'c-y')],
      [23, '', created],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await list(`?limit=${size}${filter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.ok(page.sessions.length <= size);
        seen.push(...page.sessions.map((x) => x.id));
        cursor = page.next_cursor;
        pages++;
        assert.ok(pages <= 30, 'pagination ends');
      } while (cursor);
      assert.equal(new Set(seen).size, seen.length, 'no duplicate');
      assert.deepEqual(seen, expected.map((c) => c.id).reverse(), `limit ${size}${filter}`);
      assert.equal(pages, Math.max(1, Math.ceil(expected.length / size)), 'no empty last page');
    }
  });

  test('new sessions created during pagination do not shift pages', async () => {
    const first = await list('?limit=10');
    const extra = await createSession(t.app, t.owner, { client_id: 'late' });
    const second = await list(`?limit=10&cursor=${first.next_cursor}`);
    assert.ok(!second.sessions.some((x) => x.id === extra.id));
    assert.ok(!second.sessions.some((x) => first.sessions.some((y) => y.id === x.id)));
    assert.equal(second.sessions[0].id, created[created.length - 11].id);
  });

  test('GET /sessions/{id} returns the Session with its configuration', async () => {
    const c = await createSession(t.app, t.owner, { client_id: 'one', zone: 'gb-lon', reusable: true });
    const res = await t.app.inject({ url: `/v2/sessions/${c.id}`, headers: auth(t.owner) });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json(res), c);
    assertError(await t.app.inject({ url: `/v2/sessions/${crypto.randomUUID()}`, headers: auth(t.owner) }), 404, 'session_not_found');
  });
});
