// main/embedded-trust.ts: the app's fetch trusts its embedded server's self-signed certificate
// (TLS turns on by itself when the server is shared on a public address), and nothing else.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { trustEmbeddedServer, trustOnly } from '../../main/embedded-trust.ts';
import { startServer } from '../../server/serve.ts';

const reach = async (url: string): Promise<string> => {
  try {
    return String((await fetch(url, { signal: AbortSignal.timeout(5000) })).status);
  } catch (e) {
    return String((e as { cause?: { code?: string } }).cause?.code ?? e);
  }
};

test("the embedded server's own certificate is trusted, another self-signed one is not", async (t) => {
  const dirs = [mkdtempSync(join(tmpdir(), 'vad-trust-')), mkdtempSync(join(tmpdir(), 'vad-trust-'))];
  const start = (dataDir: string) => startServer({ dataDir, port: 0, host: '127.0.0.1', publicHost: '127.0.0.1', tlsMode: 'on', vlessTcpPort: null, proxyPort: null });
  const [own, other] = [await start(dirs[0]!), await start(dirs[1]!)];
  t.after(async () => {
    trustOnly(undefined);
    await own.close();
    await other.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  assert.equal(own.services.tls.certificate?.selfSigned, true);
  assert.equal(await reach(`${own.baseUrl}/openapi.json`), 'DEPTH_ZERO_SELF_SIGNED_CERT', 'not trusted before');
  trustEmbeddedServer(own);
  assert.equal(await reach(`${own.baseUrl}/openapi.json`), '200');
  assert.equal(await reach(`${other.baseUrl}/openapi.json`), 'DEPTH_ZERO_SELF_SIGNED_CERT', 'only that certificate');
});
