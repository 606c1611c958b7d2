// Proof of TLS that needs nothing from the user: with no certificate given, a server whose
// TLS is on makes a self-signed one; real v2ray 4.34 trusting only that certificate carries
// traffic over ws and tcp; the link's pcs equals openssl's SHA-256 fingerprint of what every
// port serves; changed certificate files reach new handshakes while an open transfer finishes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer, type StartOptions } from '../../server/serve.ts';
import { silentLogger } from '../../server/log.ts';
import { selfSignedPaths } from '../../server/tls/self-signed.ts';
import type { Session } from '../../server/contract/schemas.ts';
import { removeDir, tempDir } from '../helpers/server.ts';
import { installCert, makeCert, opensslPin, servedCertificate } from '../helpers/tls.ts';
import { startFileServer, sha256, type FileServer } from './helpers/targets.ts';
import { curlSocks, requireV2ray, startV2rayClient } from './helpers/v2ray.ts';

let files: FileServer;
const dirs: string[] = [];

before(async () => {
  requireV2ray();
  files = await startFileServer({ f: 1024 * 1024, big: 6 * 1024 * 1024 });
});
after(async () => {
  await files?.close();
  for (const d of dirs) removeDir(d);
});

function dir(): string {
  const d = tempDir('vad-tls-');
  dirs.push(d);
  return d;
}

async function start(opts: Partial<StartOptions> & { dataDir: string }): Promise<RunningServer> {
  return startServer({ host: '127.0.0.1', port: 0, vlessTcpPort: 0, proxyPort: 0, publicHost: '127.0.0.1', logger: silentLogger, egress: 'allow-all', ...opts });
}

const tokens = new WeakMap<RunningServer, string>();
function token(s: RunningServer): string {
  let t = tokens.get(s);
  if (!t) tokens.set(s, (t = s.services.sqlite!.store.createToken('tls', 'owner').token));
  return t;
}

async function session(s: RunningServer): Promise<Session> {
  const r = await s.app.inject({
    method: 'POST',
    url: '/v2/sessions',
    headers: { authorization: `Bearer ${token(s)}` },
    payload: { client_id: 'tls-proof', zone: 'de-fra', reusable: true },
  });
  assert.ok(r.statusCode === 200 || r.statusCode === 201, r.body);
  return r.json() as Session;
}

function tcpConfiguration(c: Session['configuration'], s: RunningServer): Session['configuration'] {
  const { path: _path, ...rest } = c;
  return { ...rest, network: 'tcp', port: s.vlessTcpPort! };
}

async function fetchThrough(socksPort: number, name = 'f') {
  const r = await curlSocks(socksPort, files.url(`/file/${name}`));
  return { ok: r.code === 0 && sha256(r.body) === sha256(files.files.get(name)!), stderr: r.stderr };
}

test('self-signed: pcs is the served certificate\'s SHA-256 on every port, and v2ray trusting only it carries traffic over ws and tcp', async () => {
  const dataDir = dir();
  const s = await start({ dataDir, tlsMode: 'on' });
  try {
    assert.ok(s.origin.startsWith('https://'), s.origin);
    const status = s.services.settings.tls;
    assert.equal(status.enabled, true);
    assert.equal(status.source, 'self-signed');
    assert.equal(status.self_signed, true);

    const b = await session(s);
    const u = new URL(b.configuration_link);
    const p = u.searchParams;
    assert.equal(p.get('security'), 'tls');
    assert.equal(p.get('sni'), '127.0.0.1');
    assert.equal(p.get('fp'), 'chrome');
    assert.equal(p.get('alpn'), 'http/1.1');
    assert.ok(b.configuration_link.includes('&alpn=http%2F1.1'), 'alpn is percent-encoded');
    assert.equal(p.get('vcn'), null, 'the certificate names the address itself: no vcn');
    const pcs = p.get('pcs');
    assert.match(pcs ?? '', /^[0-9a-f]{64}$/);
    // The configuration mirrors the link field for field (type is the configuration's network).
    const c = b.configuration;
    for (const [k, v] of p) assert.equal(k === 'type' ? c.network : (c as Record<string, unknown>)[k], v, `configuration.${k}`);
    for (const k of ['sni', 'fp', 'alpn', 'pcs', 'vcn', 'security', 'encryption', 'path'] as const) {
      assert.equal(p.get(k) ?? undefined, c[k], `link ${k}`);
    }

    // The same certificate on the API port (https and ws), the raw TCP inbound and the proxy.
    const apiPem = await servedCertificate(s.apiPort);
    for (const port of [s.apiPort, s.vlessTcpPort!, s.proxyPort!]) {
      const served = await servedCertificate(port);
      assert.equal((await opensslPin(served)).toLowerCase(), pcs, `pcs = openssl x509 -fingerprint -sha256 of port ${port}, colons removed`);
    }
    assert.equal(status.fingerprint_sha256, pcs);

    // Kept in the data folder, 0600, naming the public host.
    const paths = selfSignedPaths(dataDir);
    for (const f of [paths.cert, paths.key]) assert.equal(statSync(f).mode & 0o777, 0o600, f);
    assert.equal(readFileSync(paths.cert, 'utf8').trim(), apiPem.trim());

    // v2ray 4.34 with system roots off, allowInsecure false, trusting that certificate alone.
    for (const conf of [c, tcpConfiguration(c, s)]) {
      const v = await startV2rayClient(conf, { trust: [apiPem] });
      try {
        const r = await fetchThrough(v.socksPort);
        assert.ok(r.ok, `${conf.network}: ${r.stderr}\n${v.output()}`);
      } finally {
        await v.close();
      }
    }
    // Control: trusting another certificate, the same client is refused (verification is real).
    const other = makeCert(dir(), 'other');
    const v = await startV2rayClient(c, { trust: [other.pem] });
    try {
      assert.equal((await fetchThrough(v.socksPort)).ok, false, 'a client that does not trust the certificate gets nothing');
    } finally {
      await v.close();
    }
  } finally {
    await s.close();
  }

  // A restart reuses the stored certificate: links (and their pins) stay valid.
  const again = await start({ dataDir, tlsMode: 'on' });
  try {
    assert.equal(again.services.settings.tls.fingerprint_sha256, s.services.settings.tls.fingerprint_sha256);
    assert.equal(new URL((await session(again)).configuration_link).searchParams.get('pcs'), s.services.settings.tls.fingerprint_sha256);
  } finally {
    await again.close();
  }
});

test('changed certificate files reach new connections on every port while an open transfer finishes', async () => {
  const d = dir();
  const a = makeCert(d, 'a');
  const b = makeCert(d, 'b');
  const live = { cert: join(d, 'live.crt'), key: join(d, 'live.key') };
  installCert(a, live);
  const s = await start({ dataDir: dir(), tlsCertFile: live.cert, tlsKeyFile: live.key, tlsWatchIntervalMs: 200 });
  try {
    const pinA = (await opensslPin(a.pem)).toLowerCase();
    const pinB = (await opensslPin(b.pem)).toLowerCase();
    assert.equal(s.services.settings.tls.source, 'files');
    assert.equal(s.services.settings.tls.reason.startsWith('auto'), true, 'auto: given files turn TLS on');
    const sess = await session(s);
    assert.equal(new URL(sess.configuration_link).searchParams.get('pcs'), pinA);
    assert.equal((await opensslPin(await servedCertificate(s.apiPort))).toLowerCase(), pinA);

    // A client that trusts both, with a slow transfer open across the swap.
    const v = await startV2rayClient(sess.configuration, { trust: [a.pem, b.pem] });
    try {
      const slow = curlSocks(v.socksPort, files.url('/slow/big?rate=1500000'), [], 60);
      await new Promise((r) => setTimeout(r, 1000));
      installCert(b, live);
      // Bounded wait for the watcher (200 ms polls) to swap the certificate in.
      let served = '';
      for (let i = 0; i < 50 && served !== pinB; i++) {
        await new Promise((r) => setTimeout(r, 200));
        served = (await opensslPin(await servedCertificate(s.apiPort))).toLowerCase();
      }
      assert.equal(served, pinB, 'new handshakes on the API port get the new certificate');
      for (const port of [s.vlessTcpPort!, s.proxyPort!]) {
        assert.equal((await opensslPin(await servedCertificate(port))).toLowerCase(), pinB, `port ${port}`);
      }
      assert.equal(s.services.settings.tls.fingerprint_sha256, pinB);
      const after = await s.app.inject({ method: 'GET', url: `/v2/sessions/${sess.id}`, headers: { authorization: `Bearer ${token(s)}` } });
      assert.equal(new URL(after.json().configuration_link).searchParams.get('pcs'), pinB, 'links follow the new certificate');

      const fresh = await fetchThrough(v.socksPort);
      assert.ok(fresh.ok, `a new connection after the swap: ${fresh.stderr}\n${v.output()}`);
      const r = await slow;
      assert.equal(r.code, 0, r.stderr + v.output());
      assert.equal(sha256(r.body), sha256(files.files.get('big')!), 'the transfer open across the swap finished intact');
      assert.ok(r.ms > 2000, 'the transfer really was open during the swap');
    } finally {
      await v.close();
    }

    // Half-written files (a key that does not match) leave the certificate in force.
    installCert({ cert: a.cert, key: b.key }, live);
    await new Promise((r) => setTimeout(r, 800));
    assert.equal((await opensslPin(await servedCertificate(s.apiPort))).toLowerCase(), pinB);
  } finally {
    await s.close();
  }
});
