// The Electron window's content security policy and request filter (main/security.ts): the
// CSP main sends, the <meta> of renderer/index.html and main/README.md state one value, with
// `connect-src 'none'` (main makes every API call); web mode serves the same page with
// `connect-src 'self'` only (server/http/web-ui.ts); and onBeforeRequest lets the window load
// files from the renderer's folder only.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { allowedRequest, CSP } from '../../main/security.ts';
import { webIndexHtml, WEB_CSP } from '../../server/http/web-ui.ts';
import { ROOT } from '../helpers/server.ts';

const html = readFileSync(join(ROOT, 'renderer', 'index.html'), 'utf8');
const metaOf = (page: string) => /http-equiv="Content-Security-Policy"\s+content="([^"]+)"/.exec(page)?.[1];

test("main's CSP, index.html's meta and main/README.md agree, with connect-src 'none'", () => {
  assert.match(CSP, /(^|; )connect-src 'none'(;|$)/);
  assert.equal(metaOf(html), CSP);
  const readme = readFileSync(join(ROOT, 'main', 'README.md'), 'utf8');
  const row = readme.split('\n').find((l) => l.startsWith('| 7 |'));
  assert.ok(row?.includes(`\`${CSP}\``), `main/README.md row 7 quotes the CSP exactly:\n${row}`);
});

test("web mode: the same policy with connect-src 'self', in the header and in the page's meta", () => {
  assert.equal(WEB_CSP, CSP.replace("connect-src 'none'", "connect-src 'self'"));
  const served = webIndexHtml(html);
  assert.equal(metaOf(served), WEB_CSP);
  assert.equal(served.replace(WEB_CSP, CSP), html, 'nothing else changes');
});

test('onBeforeRequest: only files inside the renderer folder, data:, blob: and devtools:', () => {
  const dir = join(ROOT, 'dist', 'renderer');
  const file = (p: string) => pathToFileURL(p).href;
  for (const ok of [file(join(dir, 'index.html')), `${file(join(dir, 'index.html'))}#/sessions`, file(join(dir, 'assets', 'index-abc.js')), 'data:image/png;base64,AAAA', 'blob:file:///x', 'devtools://devtools/bundled/x.html']) {
    assert.equal(allowedRequest(ok, dir), true, ok);
  }
  for (const bad of [
    'file:///etc/passwd',
    file(join(ROOT, 'dist', 'main', 'index.cjs')),
    file(join(ROOT, 'dist', 'renderer-evil', 'index.html')),
    `${file(dir)}/../main/index.cjs`,
    `${file(dir)}/assets%2F..%2F..%2Fmain%2Findex.cjs`,
    file(dir),
    'file://otherhost/share/x.html',
    'http://127.0.0.1:8787/v2/zones',
    'https://example.com/',
    'ws://127.0.0.1/',
    'javascript:alert(1)',
  ]) {
    assert.equal(allowedRequest(bad, dir), false, bad);
  }
});
