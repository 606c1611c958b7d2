// The OpenAPI document (routes/meta.ts): valid OpenAPI 3.1, every path, extensions marked.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { json, makeServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
before(async () => {
  s = await makeServer();
});
after(async () => {
  await s.close();
});

describe('extension: GET /openapi.json', () => {
  test('a valid OpenAPI 3.1 document with every path, extensions marked', async () => {
    const res = await s.app.inject({ url: '/v2/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = json(res);
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(typeof doc.info.title, 'string');
    assert.equal(typeof doc.info.version, 'string');
    assert.equal(typeof doc.paths, 'object');
    const expected: Record<string, string[]> = {
      '/v2/zones': ['get'],
      '/v2/sessions': ['get', 'post'],
      '/v2/sessions/events': ['get'],
      '/v2/sessions/{id}': ['get'],
      '/v2/sessions/{id}/status': ['get'],
      '/v2/sessions/{id}/pause': ['patch'],
      '/v2/sessions/{id}/resume': ['patch'],
      '/v2/customer/limits/global': ['delete', 'get', 'patch'],
      '/v2/customer/limits/client': ['delete', 'get', 'patch'],
      '/v2/customer/limits/session': ['delete', 'get', 'patch'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      assert.ok(doc.paths[path], `missing ${path}`);
      for (const m of methods) {
        const op = doc.paths[path][m];
        assert.ok(op, `missing ${m} ${path}`);
        assert.ok(op.responses && Object.keys(op.responses).length > 0, `${m} ${path} has responses`);
        assert.deepEqual(op.security, [{ bearerAuth: [] }], `${m} ${path} needs a token`);
      }
    }
    assert.equal(doc.paths['/v2/sessions'].get['x-extension'], true);
    assert.equal(doc.paths['/v2/sessions/{id}'].get['x-extension'], true);
    for (const p of ['/v2/zones', '/v2/sessions/{id}/status', '/v2/customer/limits/global']) {
      for (const op of Object.values<Record<string, unknown>>(doc.paths[p])) assert.notEqual(op['x-extension'], true, `${p} is in the contract`);
    }
    assert.equal(doc.paths['/v2/sessions'].post['x-extension'], undefined);
    // Status codes the contract documents are declared.
    assert.ok(['201', '400', '401', '404', '422', '500'].every((c) => c in doc.paths['/v2/sessions'].post.responses));
    assert.ok(['200', '401', '403', '404', '429', '500'].every((c) => c in doc.paths['/v2/customer/limits/client'].get.responses));
    assert.ok('204' in doc.paths['/v2/customer/limits/global'].delete.responses);
    // The request schema is the one that validates.
    const create = doc.paths['/v2/sessions'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(create.required.sort(), ['client_id', 'zone']);
    assert.equal(create.additionalProperties, false);
    // Extension fields carry the mark inside schemas too.
    const session = doc.paths['/v2/sessions'].post.responses['201'].content['application/json'].schema;
    assert.equal(session.properties.client_id['x-extension'], true);
    assert.equal(session.properties.configuration_link['x-extension'], undefined);
    const stream = doc.paths['/v2/sessions/events'].get.responses;
    for (const code of ['200', '401', '500']) assert.ok(stream[code]?.content?.['text/event-stream'], `events ${code} is text/event-stream`);
    assert.equal(stream['401'].content['text/event-stream'].schema.properties.error.type, 'object');
    const params = doc.paths['/v2/sessions/events'].get.parameters.map((p: { name: string }) => p.name).sort();
    assert.deepEqual(params, ['event_type', 'last_event_id', 'session_id', 'tail']);
    // Every $ref resolves (no dangling references).
    const text = JSON.stringify(doc);
    for (const m of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) assert.ok(doc.components.schemas[m[1]], m[1]);
  });
});
