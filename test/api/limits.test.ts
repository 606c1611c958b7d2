// The three limits records: GET, PATCH (merge, null removes, first PATCH creates), DELETE,
// validation per scope, 403 for agents, isolation between customers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertError, assertRateHeaders, auth, ISO_MS_Z, json, makeServer, type TestServer, UUID_V4 } from '../helpers/server.ts';

let s: TestServer;
before(async () => {
  s = await makeServer();
});
after(async () => {
  await s.close();
});

const SCOPES = ['global', 'client', 'session'] as const;
const TRAFFIC = ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed'];
const FIELDS = { global: TRAFFIC, client: [...TRAFFIC, 'max_sessions', 'max_reconnections'], session: TRAFFIC };
const MAX = Number.MAX_SAFE_INTEGER;

const get = (scope: string, token = s.owner) => s.app.inject({ url: `/v2/customer/limits/${scope}`, headers: auth(token) });
const del = (scope: string, token = s.owner) => s.app.inject({ method: 'DELETE', url: `/v2/customer/limits/${scope}`, headers: auth(token) });
const patch = (scope: string, body: unknown, token = s.owner) =>
  s.app.inject({ method: 'PATCH', url: `/v2/customer/limits/${scope}`, headers: { ...auth(token), 'content-type': 'application/json' }, payload: typeof body === 'string' ? body : JSON.stringify(body) });

for (const scope of SCOPES) {
  describe(`/customer/limits/${scope}`, () => {
    test('404 limits_not_found before the first PATCH, on GET and DELETE', async () => {
      const e = assertError(await get(scope), 404, 'limits_not_found');
      assert.equal(e.details.scope, scope);
      assertError(await del(scope), 404, 'limits_not_found');
    });

    test('the first PATCH creates the record; later PATCHes merge; null removes; DELETE removes it', async () => {
      const first = await patch(scope, { downloaded_bytes: 1000, upload_speed: 50 });
      assert.equal(first.statusCode, 200, first.body);
      assertRateHeaders(first);
      const rec = json(first);
      assert.match(rec.id, UUID_V4);
      assert.match(rec.created_at, ISO_MS_Z);
      assert.match(rec.updated_at, ISO_MS_Z);
      assert.equal(rec.created_at, rec.updated_at);
      assert.deepEqual(rec, { id: rec.id, created_at: rec.created_at, updated_at: rec.updated_at, downloaded_bytes: 1000, upload_speed: 50 });
      assert.deepEqual(json(await get(scope)), rec, 'GET returns what PATCH returned');

      await new Promise((r) => setTimeout(r, 5)); // updated_at has millisecond resolution
      const second = json(await patch(scope, { uploaded_bytes: 0, upload_speed: 75 }));
      assert.equal(second.id, rec.id, 'same record');
      assert.equal(second.created_at, rec.created_at);
      assert.ok(second.updated_at > rec.updated_at, 'updated_at moves forward');
      assert.deepEqual(second, { id: rec.id, created_at: rec.created_at, updated_at: second.updated_at, downloaded_bytes: 1000, uploaded_bytes: 0, upload_speed: 75 });

      const third = json(await patch(scope, { downloaded_bytes: null, download_speed: 1 }));
      assert.equal('downloaded_bytes' in third, false, 'null removes the field');
      assert.deepEqual(third, { id: rec.id, created_at: rec.created_at, updated_at: third.updated_at, uploaded_bytes: 0, upload_speed: 75, download_speed: 1 });

      // Removing every field keeps an empty record, not a missing one.
      const cleared = json(await patch(scope, { uploaded_bytes: null, upload_speed: null, download_speed: null }));
      assert.deepEqual(cleared, { id: rec.id, created_at: rec.created_at, updated_at: cleared.updated_at });
      assert.equal((await get(scope)).statusCode, 200);

      const d = await del(scope);
      assert.equal(d.statusCode, 204);
      assert.equal(d.body, '');
      assertRateHeaders(d);
      assertError(await get(scope), 404, 'limits_not_found');
      assertError(await del(scope), 404, 'limits_not_found');

      // A PATCH after DELETE creates a new record.
      const again = json(await patch(scope, { downloaded_bytes: 5 }));
      assert.notEqual(again.id, rec.id);
      assert.deepEqual(again, { id: again.id, created_at: again.created_at, updated_at: again.updated_at, downloaded_bytes: 5 });
      assert.equal((await del(scope)).statusCode, 204);
    });

    test('every field of the scope, at its bounds', async () => {
      const body: Record<string, number> = {};
      for (const f of FIELDS[scope]) body[f] = f.endsWith('_speed') ? 1 : 0;
      let rec = json(await patch(scope, body));
      for (const f of FIELDS[scope]) assert.equal(rec[f], body[f], f);
      for (const f of FIELDS[scope]) body[f] = MAX;
      rec = json(await patch(scope, body));
      for (const f of FIELDS[scope]) assert.equal(rec[f], MAX, f);
      assert.deepEqual(json(await get(scope)), rec);
      assert.equal((await del(scope)).statusCode, 204);
    });

    test('400 on an empty object, a missing body and non-object bodies', async () => {
      let e = assertError(await patch(scope, {}), 400, 'invalid_request');
      assert.equal(e.details.location, 'body');
      e = assertError(await s.app.inject({ method: 'PATCH', url: `/v2/customer/limits/${scope}`, headers: auth(s.owner) }), 400, 'invalid_request');
      for (const b of ['[]', 'null', '5', '"x"', '[{"downloaded_bytes":1}]']) assertError(await patch(scope, b), 400, 'invalid_request');
      assertError(await patch(scope, '{"downloaded_bytes":'), 400, 'invalid_request');
      assertError(await get(scope), 404, 'limits_not_found');
    });

    test('400 on invalid values, naming the field, and nothing changes', async () => {
      const base = json(await patch(scope, { downloaded_bytes: 7 }));
      const bad: [Record<string, unknown> | string, string][] = [
        [{ downloaded_bytes: -1 }, 'downloaded_bytes'],
        [{ uploaded_bytes: 1.5 }, 'uploaded_bytes'],
        [{ download_speed: 0 }, 'download_speed'],
        [{ upload_speed: 0 }, 'upload_speed'],
        [{ upload_speed: -5 }, 'upload_speed'],
        [{ downloaded_bytes: '100' }, 'downloaded_bytes'],
        [{ downloaded_bytes: true }, 'downloaded_bytes'],
        [{ downloaded_bytes: [1] }, 'downloaded_bytes'],
        [{ downloaded_bytes: {} }, 'downloaded_bytes'],
        ['{"downloaded_bytes": 9007199254740992}', 'downloaded_bytes'],
        ['{"downloaded_bytes": 1e300}', 'downloaded_bytes'],
        ['{"downloaded_bytes": 1e400}', 'downloaded_bytes'],
        ['{"download_speed": -1e400}', 'download_speed'],
      ];
      for (const [body, field] of bad) {
        const e = assertError(await patch(scope, body), 400, 'invalid_request');
        assert.ok((e.details.fields as { field: string }[]).some((f) => f.field === field), `${JSON.stringify(body)}: ${JSON.stringify(e)}`);
      }
      // A valid field next to an invalid one: the whole request is refused.
      assertError(await patch(scope, { uploaded_bytes: 3, download_speed: 0 }), 400, 'invalid_request');
      assert.deepEqual(json(await get(scope)), base);
      assert.equal((await del(scope)).statusCode, 204);
    });

    test('400 on fields the scope does not have, naming them', async () => {
      const foreign = scope === 'client' ? ['colour', 'id', 'created_at', 'updated_at'] : ['max_sessions', 'max_reconnections', 'id', 'created_at'];
      for (const f of foreign) {
        const e = assertError(await patch(scope, { [f]: 1 }), 400, 'invalid_request');
        assert.deepEqual(e.details.unknown_fields, [f]);
      }
      const e = assertError(await patch(scope, { downloaded_bytes: 1, bogus: 2 }), 400, 'invalid_request');
      assert.deepEqual(e.details.unknown_fields, ['bogus']);
      assertError(await get(scope), 404, 'limits_not_found');
    });

    test('415 for a body that is not JSON; 413 for a body over 64 KiB', async () => {
      assertError(
        await s.app.inject({ method: 'PATCH', url: `/v2/customer/limits/${scope}`, headers: { ...auth(s.owner), 'content-type': 'text/plain' }, payload: '{"downloaded_bytes":1}' }),
        415,
        'unsupported_media_type',
      );
      assertError(await patch(scope, JSON.stringify({ downloaded_bytes: 1, pad: 'x'.repeat(70 * 1024) })), 413, 'payload_too_large');
    });

    test('403 forbidden for agent tokens on GET, PATCH and DELETE, with rate headers', async () => {
      const owner = json(await patch(scope, { downloaded_bytes: 11 }));
      for (const res of [await get(scope, s.agent), await patch(scope, { downloaded_bytes: 1 }, s.agent), await patch(scope, '{bad json', s.agent), await del(scope, s.agent)]) {
        const e = assertError(res, 403, 'forbidden');
        assert.equal(e.details.role, 'agent');
        assertRateHeaders(res);
      }
      assert.deepEqual(json(await get(scope)), owner, 'the agent changed nothing');
      assert.equal((await del(scope)).statusCode, 204);
    });

    test('each customer has its own record', async () => {
      const mine = json(await patch(scope, { downloaded_bytes: 100 }));
      assertError(await get(scope, s.other), 404, 'limits_not_found');
      const theirs = json(await patch(scope, { downloaded_bytes: 200 }, s.other));
      assert.notEqual(theirs.id, mine.id);
      assert.equal(json(await get(scope)).downloaded_bytes, 100);
      assert.equal((await del(scope, s.other)).statusCode, 204);
      assert.equal(json(await get(scope)).downloaded_bytes, 100, "deleting theirs keeps mine");
      assert.equal((await del(scope)).statusCode, 204);
    });
  });
}

test('the three scopes are independent records', async () => {
  const g = json(await patch('global', { downloaded_bytes: 1 }));
  const c = json(await patch('client', { max_sessions: 2 }));
  const se = json(await patch('session', { upload_speed: 3 }));
  assert.equal(new Set([g.id, c.id, se.id]).size, 3);
  assert.equal((await del('client')).statusCode, 204);
  assert.equal(json(await get('global')).downloaded_bytes, 1);
  assert.equal(json(await get('session')).upload_speed, 3);
  assertError(await get('client'), 404, 'limits_not_found');
  assert.equal((await del('global')).statusCode, 204);
  assert.equal((await del('session')).statusCode, 204);
});

test('401 on every limits operation without a valid token', async () => {
  for (const scope of SCOPES) {
    for (const headers of [{}, { authorization: 'Bearer nope' }]) {
      assertError(await s.app.inject({ url: `/v2/customer/limits/${scope}`, headers }), 401, 'unauthorized');
      assertError(await s.app.inject({ method: 'PATCH', url: `/v2/customer/limits/${scope}`, headers, payload: { downloaded_bytes: 1 } }), 401, 'unauthorized');
      assertError(await s.app.inject({ method: 'DELETE', url: `/v2/customer/limits/${scope}`, headers }), 401, 'unauthorized');
    }
  }
});

test('405 on other methods of a limits path', async () => {
  const res = await s.app.inject({ method: 'POST', url: '/v2/customer/limits/global', headers: auth(s.owner), payload: {} });
  assertError(res, 405, 'method_not_allowed');
  const allow = String(res.headers.allow).split(/,\s*/).sort();
  assert.deepEqual(allow.filter((m) => m !== 'HEAD'), ['DELETE', 'GET', 'PATCH']);
  assertError(await s.app.inject({ url: '/v2/customer/limits/weekly', headers: auth(s.owner) }), 404, 'not_found');
});
