// GET /v2/server-info names the calling token's customer and role (extension `token`), so a UI
// can say whom it is signed in as, and ask before a link's token replaces the stored one.
// GET /v2/health (extension) tells a load balancer whether the instance serves.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { auth, json, makeServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
before(async () => {
  s = await makeServer();
});
after(async () => s.close());

test('server-info names the token\'s customer and role', async () => {
  for (const [token, customer, role] of [[s.owner, 'acme', 'owner'], [s.agent, 'acme', 'agent'], [s.other, 'globex', 'owner']] as const) {
    const res = await s.app.inject({ url: '/v2/server-info', headers: auth(token) });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json(res).token, { customer, role });
    assert.ok(!res.body.includes(token), 'never the token itself');
  }
});

test('the OpenAPI document describes it', async () => {
  const doc = json(await s.app.inject({ url: '/v2/openapi.json' }));
  const schema = doc.paths['/v2/server-info'].get.responses['200'].content['application/json'].schema;
  const props = schema.properties ?? doc.components?.schemas?.[schema.$ref?.split('/').pop()]?.properties;
  assert.ok(props.token, JSON.stringify(schema).slice(0, 300));
});

test('GET /v2/health answers without a token (and ignores a wrong one), says nothing more than ok, and is documented', async () => {
  for (const headers of [{}, auth('vad_' + 'x'.repeat(43)), { authorization: 'garbage' }]) {
    const res = await s.app.inject({ url: '/v2/health', headers });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json(res), { status: 'ok' });
    assert.match(String(res.headers['content-type']), /^application\/json/);
  }
  // Requests without a token are rate-limited by address, this one too.
  assert.ok((await s.app.inject({ url: '/v2/health' })).headers['x-ratelimit-limit']);
  const doc = json(await s.app.inject({ url: '/v2/openapi.json' }));
  const op = doc.paths['/v2/health'].get;
  assert.equal(op['x-extension'], true);
  assert.equal(op.security, undefined, 'no token');
  assert.ok(op.responses['500']);
});

test('GET /v2/health: a database that fails a read is unhealthy, with the reason', async () => {
  const t = await makeServer();
  try {
    t.services.sqlite!.store.db.close();
    const res = await t.app.inject({ url: '/v2/health' });
    assert.equal(res.statusCode, 500, res.body);
    const e = json(res).error;
    assert.equal(e.code, 'service_unavailable');
    assert.deepEqual(e.details, { reason: 'database_error', retry_after: 5 });
    assert.equal(res.headers['retry-after'], '5');
  } finally {
    await t.close().catch(() => {});
  }
});
