// The web UI's single-page fallback (server/http/web-ui.ts): index.html for page addresses a
// browser asks for, and never for what looks like an API call: any `/v<n>/...` other than /v2,
// and any request that does not accept HTML, gets the not_found error record.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WEB_CSP } from '../../server/http/web-ui.ts';
import { assertError, makeServer, removeDir, tempDir, type TestServer } from '../helpers/server.ts';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('the single-page fallback', () => {
  let s: TestServer;
  let rendererDir: string;
  before(async () => {
    rendererDir = tempDir('vad-renderer-');
    mkdirSync(join(rendererDir, 'assets'));
    writeFileSync(join(rendererDir, 'index.html'), '<!doctype html><title>app</title>');
    writeFileSync(join(rendererDir, 'assets', 'app.js'), 'export {};');
    s = await makeServer({ rendererDir });
  });
  after(async () => {
    await s.close();
    removeDir(rendererDir);
  });

  test('GET /v1/zones (any /v<n>/ other than /v2) is a 404 error record, whatever it accepts', async () => {
    for (const url of ['/v1/zones', '/v1', '/v3/sessions/x', '/V1/zones', '/v10/zones?x=1']) {
      for (const accept of [undefined, 'application/json', BROWSER_ACCEPT]) {
        const res = await s.app.inject({ url, headers: accept ? { accept } : {} });
        assertError(res, 404, 'not_found');
        assert.match(String(res.headers['content-type']), /^application\/json/, `${url} (${accept})`);
      }
    }
  });

  test('a page address answers index.html only to a request that accepts HTML', async () => {
    const page = await s.app.inject({ url: '/sessions/abc', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(page.body, /<title>app<\/title>/);
    for (const accept of [undefined, 'application/json', '*/*']) {
      const res = await s.app.inject({ url: '/sessions/abc', headers: accept ? { accept } : {} });
      assertError(res, 404, 'not_found');
    }
  });

  test('the UI itself and its files are still served', async () => {
    const root = await s.app.inject({ url: '/', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(root.statusCode, 200);
    assert.match(root.body, /<title>app<\/title>/);
    const asset = await s.app.inject({ url: '/assets/app.js' });
    assert.equal(asset.statusCode, 200);
    assertError(await s.app.inject({ url: '/assets/missing.js', headers: { accept: BROWSER_ACCEPT } }), 404, 'not_found');
  });
});

test("web mode serves index.html with connect-src 'self' in the header and the meta", async () => {
  const rendererDir = tempDir('vad-renderer-');
  const electronMeta = "default-src 'self'; connect-src 'none'";
  writeFileSync(join(rendererDir, 'index.html'), `<!doctype html><head><meta http-equiv="Content-Security-Policy" content="${electronMeta}" /></head><title>app</title>`);
  const s = await makeServer({ rendererDir });
  try {
    for (const url of ['/', '/index.html', '/sessions/abc']) {
      const res = await s.app.inject({ url, headers: { accept: BROWSER_ACCEPT } });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.headers['content-security-policy'], WEB_CSP, url);
      assert.ok(res.body.includes(`content="${WEB_CSP}"`), res.body);
      assert.ok(!res.body.includes("connect-src 'none'"), url);
    }
  } finally {
    await s.close();
    removeDir(rendererDir);
  }
});
