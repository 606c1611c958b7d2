// GET /v2/zones (routes/zones.ts): the catalogue as the API lists it, for both roles.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertRateHeaders, auth, json, makeServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
before(async () => {
  s = await makeServer();
});
after(async () => {
  await s.close();
});

describe('GET /zones', () => {
  test('lists the catalogue with name, code and has_active_nodes', async () => {
    const res = await s.app.inject({ url: '/v2/zones', headers: auth(s.owner) });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assertRateHeaders(res);
    const body = json(res);
    assert.deepEqual(Object.keys(body), ['zones']);
    assert.ok(Array.isArray(body.zones) && body.zones.length >= 3);
    for (const z of body.zones) {
      assert.equal(typeof z.name, 'string');
      assert.match(z.code, /^[a-z0-9-]{2,32}$/);
      assert.equal(typeof z.has_active_nodes, 'boolean');
      assert.match(z.country, /^[A-Z]{2}$/);
      assert.ok(Array.isArray(z.cities));
    }
    const byCode = new Map(body.zones.map((z: { code: string }) => [z.code, z]));
    assert.equal((byCode.get('br-sao') as { has_active_nodes: boolean }).has_active_nodes, false, 'a zone with no nodes');
    assert.equal((byCode.get('au-syd') as { has_active_nodes: boolean }).has_active_nodes, false, 'a zone whose only node is down');
    assert.equal((byCode.get('de-fra') as { has_active_nodes: boolean }).has_active_nodes, true);
    assert.ok(new Set(body.zones.map((z: { country: string }) => z.country)).size >= 3, 'several countries');
  });

  test('the agent role may list zones', async () => {
    const res = await s.app.inject({ url: '/v2/zones', headers: auth(s.agent) });
    assert.equal(res.statusCode, 200);
  });
});
