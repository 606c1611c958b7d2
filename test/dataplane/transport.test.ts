// Transport options: TLS on the raw TCP inbound (real v2ray, security tls) and on the proxy
// (curl to an HTTPS proxy), and WebSocket early data in Sec-WebSocket-Protocol; closing with
// sockets no connection holds yet (a handshake under way, a half-closed one).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startFileServer, startTcpEcho, sha256, type FileServer } from './helpers/targets.ts';
import { startV2rayClient, curlSocks, curl, requireV2ray } from './helpers/v2ray.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';
import { connect as tlsConnect } from 'node:tls';
import { connect as connectTcp } from 'node:net';
import { closed, readReply, socksAddress, socksAuth } from './helpers/socks5-client.ts';

let h: Harness;
let files: FileServer;
let dir: string;

before(async () => {
  requireV2ray();
  dir = mkdtempSync(join(tmpdir(), 'dp-tls-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-days', '2', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  h = await startHarness({ tls: { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') } });
  files = await startFileServer({ f: 1024 * 1024 });
});
after(async () => {
  await h?.close();
  await files?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('VLESS over TCP with TLS (v2ray security tls)', async () => {
  const id = h.mem.createSession({ reusable: true });
  const v = await startV2rayClient({ ...h.config(id, 'tcp'), security: 'tls', sni: 'localhost' });
  try {
    const r = await curlSocks(v.socksPort, files.url('/file/f'));
    assert.equal(r.code, 0, r.stderr + v.output());
    assert.equal(sha256(r.body), sha256(files.files.get('f')!));
    await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
    assert.ok(h.mem.sessions.get(id)!.downloaded_bytes > 1024 * 1024);
  } finally {
    await v.close();
  }
});

test('the proxy over TLS (curl to an https:// proxy)', async () => {
  const id = h.mem.createSession({ reusable: true });
  const r = await curl(['--proxy-insecure', '-x', `https://${id}-cc-DE:${id}@127.0.0.1:${h.proxyPort}`, files.url('/file/f')]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(sha256(r.body), sha256(files.files.get('f')!));
});

test('SOCKS5 inside TLS on the proxy port: the same handshake and relay', async () => {
  const id = h.mem.createSession({ reusable: true });
  const s = tlsConnect({ host: '127.0.0.1', port: h.proxyPort, rejectUnauthorized: false });
  await new Promise((r) => s.once('secureConnect', r));
  assert.deepEqual(await socksAuth(s, `${id}-cc-DE`, id), { ok: true });
  s.write(Buffer.concat([Buffer.from([5, 1, 0]), socksAddress('127.0.0.1', files.port)]));
  assert.equal((await readReply(s)).rep, 0);
  s.write('GET /file/f HTTP/1.0\r\n\r\n');
  const got = (await closed(s)).got;
  assert.ok(got.subarray(-1024 * 1024).equals(files.files.get('f')!));
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  assert.equal(h.mem.sessions.get(id)!.downloaded_bytes, got.length, 'what is inside TLS is counted, not the TLS records');
});

test('WebSocket early data in Sec-WebSocket-Protocol is taken as the first VLESS bytes', async () => {
  const echo = await startTcpEcho();
  const id = h.mem.createSession({ reusable: true });
  try {
    const early = Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echo.port, address: '127.0.0.1' }), Buffer.from('early-hello')]);
    const ws = new WebSocket(`ws://127.0.0.1:${h.wsPort}/vless`, [early.toString('base64url')]);
    const got: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no echo')), 3000);
      ws.on('message', (m: Buffer) => {
        got.push(m);
        if (Buffer.concat(got).length >= 2 + 11) { clearTimeout(t); resolve(); }
      });
      ws.on('error', reject);
    });
    assert.deepEqual(Buffer.concat(got), Buffer.concat([Buffer.from([0, 0]), Buffer.from('early-hello')]));
    ws.close();
  } finally {
    await echo.close();
  }
});

test('close() ends at once while TLS ports hold a socket before its handshake and one its peer half-closed before the VLESS header', async () => {
  const tls = { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') };
  const own = await startHarness({ tls, headerTimeoutMs: 60_000 });
  const ports = [own.vlessTcpPort!, own.proxyPort!];
  // A plain TCP connect that says nothing, and a TLS handshake then a half-close: what a port probe leaves.
  const raw = ports.map((port) => connectTcp(port, '127.0.0.1'));
  await Promise.all(raw.map((s) => new Promise((r) => s.once('connect', r))));
  const probes = await Promise.all(ports.map((port) => new Promise<ReturnType<typeof tlsConnect>>((resolve) => {
    const s = tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => resolve(s));
  })));
  for (const s of probes) s.end();
  await new Promise((r) => setTimeout(r, 200));
  const t0 = Date.now();
  await Promise.race([own.close(), new Promise((_, reject) => setTimeout(() => reject(new Error('close() still waits after 5 s')), 5000))]);
  assert.ok(Date.now() - t0 < 5000);
  for (const s of [...raw, ...probes]) s.destroy();
});
