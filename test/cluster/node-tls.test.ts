// TLS on a node's own listeners (TLS wherever traffic leaves the machine): a node run
// with TLS makes a self-signed certificate for its public host (kept in <data-dir>/tls/), serves
// it on the VLESS ws port (wss), the raw TCP inbound and the proxy, and reports its pin; the links
// of sessions placed on it say `security=tls` with that `pcs`. Real v2ray 4.34 trusting only that
// certificate carries traffic over wss and tcp+tls, real curl through the node's https proxy, and
// the bytes reach the control plane's counters. The certificate follows the public host the
// control plane names (TlsCertificates.coverHost), and the CLI's TLS flags are checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { TlsCertificates } from '../../server/tls/certificates.ts';
import { certificateCovers, selfSignedPaths } from '../../server/tls/self-signed.ts';
import type { Session } from '../../server/contract/schemas.ts';
import { callApi } from '../helpers/http.ts';
import { CLI, NODE, ROOT, removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { makeCert, opensslPin, servedCertificate } from '../helpers/tls.ts';
import { startFileServer, sha256, type FileServer } from '../dataplane/helpers/targets.ts';
import { curlSocks, requireV2ray, startV2rayClient } from '../dataplane/helpers/v2ray.ts';

const HOST = '127.0.0.6';
let srv: RunningServer;
let node: RunningNode;
let nodeDir: string;
let files: FileServer;
let owner: string;
const dirs: string[] = [];

before(async () => {
  requireV2ray();
  const dir = tempDir('vad-node-tls-cp-');
  dirs.push(dir);
  const zonesFile = join(dir, 'zones.json');
  writeFileSync(zonesFile, JSON.stringify({ zones: [{ code: 'nl-ams', name: 'Amsterdam', country: 'NL', cities: ['amsterdam'], nodes: [] }] }));
  srv = await startServer({ zonesFile, dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = (await srv.services.data.createToken('node-tls', 'owner')).token;
  const added = await srv.services.data.addNode({ name: 'ams-tls', zone: 'nl-ams', public_host: HOST });
  nodeDir = tempDir('vad-node-tls-');
  dirs.push(nodeDir);
  node = await runNode({ controls: [srv.origin], token: added.token, host: HOST, port: 0, vlessTcpPort: 0, proxyPort: 0, relayPort: null, egress: 'allow-all', dataDir: nodeDir, tls: { mode: 'on' }, log: silentLogger });
  files = await startFileServer({ f: 1024 * 1024 });
});
after(async () => {
  await node?.close();
  await srv?.close();
  await files?.close();
  for (const d of dirs) removeDir(d);
});

const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);

test('a node with TLS: links carry its pin, every port serves that certificate, v2ray over wss and tcp+tls and curl through its https proxy are counted', async () => {
  assert.equal(node.ports.tls, true);
  assert.match(node.ports.tls_pcs ?? '', /^[0-9a-f]{64}$/);
  // The session's link follows what the node reported (its first report stores the pin).
  let made: Session | undefined;
  await waitFor(async () => {
    const r = await call('POST', '/sessions', { client_id: 'tls-alice', zone: 'nl-ams', reusable: true });
    if (r.status !== 201 && r.status !== 200) return false;
    made = r.json as Session;
    return made.configuration.security === 'tls';
  }, 10_000, 'a TLS link for the node');
  const c = made!.configuration;
  const link = new URL(made!.configuration_link);
  assert.equal(c.address, HOST);
  assert.equal(link.searchParams.get('security'), 'tls');
  assert.equal(link.searchParams.get('sni'), HOST);
  assert.equal(link.searchParams.get('fp'), 'chrome');
  assert.equal(link.searchParams.get('alpn'), 'http/1.1');
  assert.equal(link.searchParams.get('pcs'), node.ports.tls_pcs);
  assert.equal(c.pcs, node.ports.tls_pcs);

  // One certificate on every port, kept 0600 in the node's data folder, naming its public host.
  const pem = await servedCertificate(node.ports.vless_ws_port, HOST, HOST);
  for (const port of [node.ports.vless_ws_port, node.ports.vless_tcp_port!, node.ports.proxy_port!]) {
    assert.equal((await opensslPin(await servedCertificate(port, HOST, HOST))).toLowerCase(), c.pcs, `port ${port} serves the pinned certificate`);
  }
  const paths = selfSignedPaths(nodeDir);
  for (const f of [paths.cert, paths.key]) assert.equal(statSync(f).mode & 0o777, 0o600, f);
  assert.ok(certificateCovers(new X509Certificate(readFileSync(paths.cert, 'utf8')), HOST));

  // Real v2ray, system roots off and allowInsecure false, trusting that certificate alone.
  const { path: _path, ...rest } = c;
  for (const conf of [c, { ...rest, network: 'tcp' as const, port: node.ports.vless_tcp_port! }]) {
    const v = await startV2rayClient(conf, { trust: [pem] });
    try {
      const r = await curlSocks(v.socksPort, files.url('/file/f'));
      assert.ok(r.code === 0 && sha256(r.body) === sha256(files.files.get('f')!), `${conf.network}+tls: ${r.stderr}\n${v.output()}`);
    } finally {
      await v.close();
    }
  }
  // Control: a client trusting another certificate gets nothing (verification is real).
  const other = makeCert(tempDir('vad-node-tls-other-'), 'other');
  const v = await startV2rayClient(c, { trust: [other.pem] });
  try {
    assert.notEqual((await curlSocks(v.socksPort, files.url('/file/f'), [], 5)).code, 0);
  } finally {
    await v.close();
  }

  // The proxy speaks TLS too: curl through it as an https proxy, verifying the certificate.
  const caFile = join(nodeDir, 'served.pem');
  writeFileSync(caFile, pem);
  const viaProxy = await new Promise<{ code: number; body: string }>((resolve) => {
    execFile('curl', ['-s', '--max-time', '10', '-x', `https://${HOST}:${node.ports.proxy_port}`, '--proxy-cacert', caFile, '-U', `${c.id}:${c.id}`, '-o', '/dev/null', '-w', '%{http_code}', files.url('/file/f')], { encoding: 'utf8' }, (_e, out) => resolve({ code: Number(out), body: out }));
  });
  assert.equal(viaProxy.code, 200);

  // Three downloads of 1 MiB, counted at the control plane.
  await waitFor(async () => (await call('GET', `/sessions/${c.id}/status`)).json.downloaded_bytes >= 3 * 1024 * 1024, 10_000, 'the node reported the bytes');
});

test('a self-signed certificate follows the public host the control plane names; given files are used as they are', async () => {
  const dir = tempDir('vad-cover-');
  dirs.push(dir);
  const tls = await TlsCertificates.open({ mode: 'on', publicHost: '127.0.0.1', dataDir: dir, log: silentLogger });
  try {
    const first = tls.certificate!.fingerprint;
    const changed: string[] = [];
    tls.onChange((pair) => changed.push(pair.cert));
    assert.equal(await tls.coverHost('127.0.0.1'), false, 'already named: kept');
    // Two states naming the new host at once make one certificate.
    const [x, y] = await Promise.all([tls.coverHost('node-1.example.net'), tls.coverHost('node-1.example.net')]);
    assert.deepEqual([x, y], [true, false]);
    assert.notEqual(tls.certificate!.fingerprint, first);
    assert.ok(certificateCovers(tls.certificate!.x509, 'node-1.example.net'));
    assert.equal(changed.length, 1, 'listeners hear of the new certificate');
    assert.equal(readFileSync(selfSignedPaths(dir).cert, 'utf8'), changed[0], 'kept for the next start');
  } finally {
    tls.close();
  }
  const given = makeCert(dir, 'given', 'node.example.net');
  const fromFiles = await TlsCertificates.open({ mode: 'on', publicHost: '127.0.0.1', dataDir: dir, certFile: given.cert, keyFile: given.key, watchIntervalMs: 0, log: silentLogger });
  try {
    assert.equal(await fromFiles.coverHost('other.example.net'), false, 'a given certificate is never replaced');
    assert.equal(fromFiles.status.source, 'files');
  } finally {
    fromFiles.close();
  }
});

test('node run: --tls takes auto, on or off; --tls-cert goes with --tls-key; a loopback node with --tls on says so', async () => {
  const bad = (args: string[]) => spawnSync(NODE, [CLI, 'node', 'run', '--control', srv.origin, '--token', 'vadn_x', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
  let r = bad(['--tls', 'maybe']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /--tls takes auto, on or off/);
  r = bad(['--tls-cert', '/nonexistent.pem']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /--tls-cert and --tls-key go together/);
  r = bad(['--tls', 'off', '--tls-cert', 'a.pem', '--tls-key', 'b.pem']);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /contradict/);

  // On loopback, auto is off and --tls on turns it on; the start line says which, with the pin.
  const added = await srv.services.data.addNode({ name: 'cli-tls', zone: 'nl-ams', public_host: '127.0.0.7' });
  const d = tempDir('vad-node-tls-cli-');
  dirs.push(d);
  const child = spawn(NODE, [CLI, 'node', 'run', '--control', srv.origin, '--token', added.token, '--host', '127.0.0.7', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--relay-port', 'off', '--tls', 'on', '--data-dir', d], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
  try {
    await waitFor(() => out.includes('node listening'), 20_000, 'the node starts');
    assert.match(out, /VLESS wss 127\.0\.0\.7:\d+.*TLS on \(self-signed, sha256 [0-9a-f]{64}\)/);
  } finally {
    child.kill('SIGTERM');
    await new Promise((res) => child.once('exit', res));
  }
  await srv.services.data.removeNode('cli-tls');
});
