// `vpn-access serve` and TLS: --tls validation, auto mode making a self-signed certificate for a
// public host (verified by curl against that certificate), and SIGHUP reloading certificate files.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { printedToken, serve } from '../helpers/cli.ts';
import { removeDir, tempDir } from '../helpers/server.ts';
import { installCert, makeCert, opensslPin, servedCertificate } from '../helpers/tls.ts';

function curl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '--max-time', '10', ...args], (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

describe('serve with TLS', () => {
  test('bad --tls values fail with a message', async () => {
    const d = tempDir();
    try {
      await assert.rejects(serve(d, ['--tls', 'maybe']), /exited early[\s\S]*--tls takes auto, on or off/);
      await assert.rejects(serve(d, ['--tls', 'off', '--tls-cert', 'a.pem', '--tls-key', 'b.pem']), /exited early[\s\S]*--tls off cannot/);
      await assert.rejects(serve(d, ['--tls-watch-interval', 'soon']), /exited early[\s\S]*tls-watch-interval/);
      await assert.rejects(serve(d, ['--tls-cert', join(d, 'missing.crt'), '--tls-key', join(d, 'missing.key')]), /exited early[\s\S]*cannot read the TLS certificate/);
    } finally {
      removeDir(d);
    }
  });

  test('auto with a public host: https with a self-signed certificate that curl verifies when it trusts that file', async () => {
    const d = tempDir();
    const srv = await serve(d, ['--public-host', '203.0.113.7']);
    try {
      assert.ok(srv.baseUrl.startsWith('https://127.0.0.1:'), srv.baseUrl);
      assert.match(srv.stdout(), /TLS on \(self-signed, sha256 [0-9a-f]{64}\): auto: the public host 203\.0\.113\.7 is public/);
      const port = new URL(srv.baseUrl).port;
      const token = printedToken(srv.stdout())!;
      const caFile = join(d, 'tls', 'self-signed-cert.pem');
      // The certificate names 203.0.113.7: reach it at that name, connected to loopback.
      const r = await curl(['--cacert', caFile, '--connect-to', `203.0.113.7:${port}:127.0.0.1:${port}`, '-H', `authorization: Bearer ${token}`,
        `https://203.0.113.7:${port}/v2/server-info`]);
      assert.equal(r.code, 0, r.stderr);
      const info = JSON.parse(r.stdout);
      assert.equal(info.tls_status.source, 'self-signed');
      assert.equal(info.tls_status.fingerprint_sha256, (await opensslPin(await servedCertificate(Number(port)))).toLowerCase());
      // Without trusting it, curl refuses: the certificate is not CA-signed.
      assert.notEqual((await curl([`${srv.baseUrl}/server-info`])).code, 0);
    } finally {
      srv.kill();
      await srv.exited;
      removeDir(d);
    }
  });

  test('SIGHUP re-reads the certificate files (with watching off)', async () => {
    const d = tempDir();
    const certs = tempDir();
    const a = makeCert(certs, 'a');
    const b = makeCert(certs, 'b');
    const live = { cert: join(certs, 'live.crt'), key: join(certs, 'live.key') };
    installCert(a, live);
    const srv = await serve(d, ['--quiet', '--tls-cert', live.cert, '--tls-key', live.key, '--tls-watch-interval', '0']);
    try {
      const port = Number(new URL(srv.baseUrl).port);
      const pinA = await opensslPin(a.pem);
      const pinB = await opensslPin(b.pem);
      assert.equal(await opensslPin(await servedCertificate(port)), pinA);
      installCert(b, live);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(await opensslPin(await servedCertificate(port)), pinA, 'no reload before the signal when watching is off');
      srv.kill('SIGHUP');
      let served = pinA;
      for (let i = 0; i < 50 && served !== pinB; i++) {
        await new Promise((r) => setTimeout(r, 100));
        served = await opensslPin(await servedCertificate(port));
      }
      assert.equal(served, pinB);
      assert.match(srv.stdout(), /certificate reloaded/);
      assert.equal(srv.child.exitCode, null, 'SIGHUP does not stop the server');
    } finally {
      srv.kill();
      await srv.exited;
      removeDir(d);
      removeDir(certs);
    }
  });
});
