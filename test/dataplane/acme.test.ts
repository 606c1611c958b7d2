// ACME end to end against Debian's pebble with real http-01 validation (names resolved by our
// DNS responder to 127.0.0.1, pebble fetching the challenge from the server's listener): the
// certificate serves every port, links carry no pcs, a forced renewal validates again and swaps
// the certificate in, a restart reuses the stored one, and a failed validation gets no certificate;
// the same from the server bundle.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { silentLogger } from '../../server/log.ts';
import { acmePaths, renewalDue, type AcmeOptions } from '../../server/tls/acme.ts';
import { removeDir, tempDir } from '../helpers/server.ts';
import { ensureServerBundle, serve } from '../helpers/cli.ts';
import { startPebble, type Pebble } from '../helpers/pebble.ts';
import { opensslPin, servedCertificate } from '../helpers/tls.ts';
import { freePort } from './helpers/targets.ts';

const DOMAIN = 'vpn-acme.test';
let pebble: Pebble;
const dirs: string[] = [];
function dir(): string {
  const d = tempDir('vad-acme-');
  dirs.push(d);
  return d;
}

before(async () => {
  pebble = await startPebble(dir());
});
after(async () => {
  await pebble?.close();
  for (const d of dirs) removeDir(d);
});

function curl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '--max-time', '10', ...args], (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

function acme(extra: Partial<AcmeOptions> = {}): AcmeOptions {
  return { domain: DOMAIN, email: 'ops@vpn-acme.test', directoryUrl: pebble.directoryUrl, directoryCa: pebble.apiCa, httpPort: pebble.httpPort, httpHost: '127.0.0.1', ...extra };
}

function start(dataDir: string, a: AcmeOptions): Promise<RunningServer> {
  return startServer({ dataDir, host: '127.0.0.1', port: 0, vlessTcpPort: 0, proxyPort: 0, publicHost: DOMAIN, logger: silentLogger, acme: a });
}

async function link(s: RunningServer): Promise<URL> {
  const token = s.services.sqlite!.store.createToken('acme', 'owner').token;
  const r = await s.app.inject({ method: 'POST', url: '/v2/sessions', headers: { authorization: `Bearer ${token}` }, payload: { client_id: 'c', zone: 'de-fra' } });
  assert.equal(r.statusCode, 201, r.body);
  return new URL(r.json().configuration_link);
}

test('renewalDue: once less than a third of the lifetime is left', () => {
  const c = new X509Certificate(pebble.apiCa);
  const from = Date.parse(c.validFrom);
  const to = Date.parse(c.validTo);
  assert.equal(renewalDue(pebble.apiCa, from + 1000), false);
  assert.equal(renewalDue(pebble.apiCa, to - (to - from) / 4), true);
  assert.equal(renewalDue('not a certificate'), true);
});

test('issue with real http-01 validation, serve it everywhere, renew, and reuse after a restart', async () => {
  const dataDir = dir();
  const asked0 = pebble.dns.asked.length;
  let s = await start(dataDir, acme());
  try {
    const st = s.services.settings.tls;
    assert.equal(st.source, 'acme', `${st.reason}\n${pebble.output()}`);
    assert.equal(st.self_signed, false);
    assert.deepEqual(st.names, [DOMAIN]);
    assert.ok(pebble.dns.asked.slice(asked0).includes(DOMAIN), 'pebble resolved the name to validate it');

    const u = await link(s);
    assert.equal(u.searchParams.get('security'), 'tls');
    assert.equal(u.searchParams.get('sni'), DOMAIN);
    assert.equal(u.searchParams.get('pcs'), null, 'a CA-signed certificate is not pinned');
    assert.equal(u.searchParams.get('vcn'), null);

    for (const port of [s.apiPort, s.vlessTcpPort!, s.proxyPort!]) {
      assert.equal((await opensslPin(await servedCertificate(port, DOMAIN))).toLowerCase(), st.fingerprint_sha256, `port ${port}`);
    }
    // The chain verifies up to pebble's root, by name.
    const apiCaFile = `${dataDir}/pebble-api.pem`;
    writeFileSync(apiCaFile, pebble.apiCa);
    const root = await curl(['--cacert', apiCaFile, `${pebble.managementUrl}/roots/0`]);
    assert.equal(root.code, 0, root.stderr);
    const rootFile = `${dataDir}/pebble-root.pem`;
    writeFileSync(rootFile, root.stdout);
    const token = s.services.sqlite!.store.createToken('acme', 'owner').token;
    const ok = await curl(['--cacert', rootFile, '--connect-to', `${DOMAIN}:${s.apiPort}:127.0.0.1:${s.apiPort}`, '-H', `authorization: Bearer ${token}`,
      `https://${DOMAIN}:${s.apiPort}/v2/server-info`]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).tls_status.source, 'acme');

    const p = acmePaths(dataDir);
    for (const f of [p.account, p.key, p.cert]) assert.equal(statSync(f).mode & 0o777, 0o600, f);

    // Renewal: a new order, validated again (the first order deactivated its authorizations, so
    // the CA has none to reuse), swapped in live.
    const before = st.fingerprint_sha256;
    const asked1 = pebble.dns.asked.length;
    assert.equal(await s.services.tls.renewAcme(true), true, pebble.output());
    assert.notEqual(st.fingerprint_sha256, before);
    assert.ok(pebble.dns.asked.length > asked1, 'the renewal was validated again');
    for (const port of [s.apiPort, s.vlessTcpPort!, s.proxyPort!]) {
      assert.equal((await opensslPin(await servedCertificate(port, DOMAIN))).toLowerCase(), st.fingerprint_sha256, `port ${port} after renewal`);
    }
    assert.equal(await s.services.tls.renewAcme(), false, 'not due: no new order');

    const renewed = st.fingerprint_sha256;
    await s.close();
    const asked2 = pebble.dns.asked.length;
    s = await start(dataDir, acme());
    assert.equal(s.services.settings.tls.source, 'acme');
    assert.equal(s.services.settings.tls.fingerprint_sha256, renewed, 'the stored certificate is reused');
    assert.equal(pebble.dns.asked.length, asked2, 'no order at a restart with a valid certificate');
  } finally {
    await s.close();
  }
});

test('a challenge the CA cannot fetch gets no certificate: the server falls back to self-signed and says why', async () => {
  // The listener answers on another port than the one pebble checks.
  const s = await start(dir(), acme({ httpPort: await freePort() }));
  try {
    const st = s.services.settings.tls;
    assert.equal(st.source, 'self-signed');
    assert.equal(st.enabled, true);
    assert.match(st.reason, /ACME failed \(.*(connection refused|Connection refused|invalid|unauthorized)/i);
    assert.match((await link(s)).searchParams.get('pcs') ?? '', /^[0-9a-f]{64}$/);
  } finally {
    await s.close();
  }
});

test('from the bundle (what `npm run serve` runs after a build) the certificate is issued too, and a failed one falls back', async () => {
  ensureServerBundle();
  const caFile = `${dir()}/pebble-api.pem`;
  writeFileSync(caFile, pebble.apiCa);
  const flags = (httpPort: number) => ['--public-host', DOMAIN, '--acme-domain', DOMAIN, '--acme-email', 'ops@vpn-acme.test', '--acme-directory', pebble.directoryUrl,
    '--acme-directory-ca', caFile, '--acme-http-port', String(httpPort), '--quiet'];
  for (const [httpPort, source] of [[pebble.httpPort, /TLS on \(acme, sha256 [0-9a-f]{64}\)/], [await freePort(), /TLS on \(self-signed, sha256 [0-9a-f]{64}\): .*ACME failed/]] as const) {
    const srv = await serve(dir(), flags(httpPort), 60_000, 'bundle');
    try {
      assert.match(srv.stdout(), source, `${srv.stdout()}\n${pebble.output()}`);
    } finally {
      srv.kill('SIGTERM');
      await srv.exited;
    }
  }
});
