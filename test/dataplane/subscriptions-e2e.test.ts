// Subscriptions carrying real traffic through the real service (server/serve.ts, egress
// allow-all for loopback targets) with Debian's v2ray 4.34:
// - base64: the feed decoded, each link through the share-link parser and the tests' v2ray
//   outbound builder, then a download through each session;
// - Xray JSON: the feed written to a file byte for byte, `v2ray -test -config` on it, then v2ray
//   run on it as it is, and downloads through its SOCKS and HTTP inbounds on loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { LOCAL_PORTS, xrayConfig } from '../../server/subscriptions/formats.ts';
import { buildConfiguration, buildLink } from '../../server/links.ts';
import type { Configuration } from '../../server/contract/schemas.ts';
import { startFileServer, sha256, type FileServer } from './helpers/targets.ts';
import { startV2rayClient, curlSocks, curl, requireV2ray, V2RAY } from './helpers/v2ray.ts';
import { parseVlessLink } from '../helpers/vless-link.ts';
import { callApi } from '../helpers/http.ts';

const MB = 1024 * 1024;
let srv: RunningServer;
let files: FileServer;
let dir: string;
let token: string;

before(async () => {
  requireV2ray();
  dir = mkdtempSync(join(tmpdir(), 'vad-sub-'));
  srv = await startServer({ dataDir: dir, port: 0, host: '127.0.0.1', egress: 'allow-all', statsIntervalMs: 200 });
  token = srv.ownerToken!;
  files = await startFileServer({ f: 1 * MB });
});
after(async () => {
  await srv?.close();
  await files?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const api = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, token, method, path, body);

async function downloaded(ids: string[]): Promise<number> {
  let sum = 0;
  for (const id of ids) sum += (await api('GET', `/sessions/${id}/status`)).json.downloaded_bytes;
  return sum;
}

async function waitUntil(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function sessionsOf(client: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await api('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
    assert.equal(r.status, 201);
    ids.push(r.json.id);
  }
  return ids;
}

test('base64 feed: every link, parsed as a client would, carries a download through v2ray 4.34', async () => {
  const ids = await sessionsOf('sub-links', 2);
  const sub = await api('PUT', '/subscriptions/sub-links');
  assert.equal(sub.status, 200);
  assert.ok(sub.json.url.startsWith(`${srv.origin}/sub/`), `${sub.json.url} is on ${srv.origin}`);
  const res = await fetch(sub.json.url, { headers: { 'user-agent': 'v2rayNG/1.9.30' } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('subscription-userinfo') ?? '', /^upload=0; download=0; total=0$/);
  const links = Buffer.from(await res.text(), 'base64').toString('utf8').split('\n');
  assert.equal(links.length, 2);
  for (const link of links) {
    const c = parseVlessLink(link);
    assert.ok(ids.includes(c.id));
    const v = await startV2rayClient(c);
    try {
      const r = await curlSocks(v.socksPort, files.url('/file/f'));
      assert.equal(r.code, 0, r.stderr + v.output());
      assert.equal(sha256(r.body), sha256(files.files.get('f')!));
    } finally {
      await v.close();
    }
    await waitUntil(async () => (await api('GET', `/sessions/${c.id}/status`)).json.downloaded_bytes >= MB, 5000, 'the session counted the download');
  }
  // The counters now show in the header clients read.
  const after = await fetch(sub.json.url);
  const info = after.headers.get('subscription-userinfo') ?? '';
  const download = Number(/download=(\d+)/.exec(info)?.[1]);
  assert.ok(download >= 2 * MB, info);
});

test('Xray JSON feed: v2ray 4.34 accepts it as it is and carries traffic through its SOCKS and HTTP inbounds', async () => {
  for (const p of [LOCAL_PORTS.xraySocks, LOCAL_PORTS.xrayHttp]) {
    assert.ok(await portFree(p), `loopback port ${p} (the config's inbound) must be free for this test`);
  }
  const ids = await sessionsOf('sub-xray', 2);
  const sub = await api('PUT', '/subscriptions/sub-xray');
  // Chosen from the User-Agent, not ?format=.
  const res = await fetch(sub.json.url, { headers: { 'user-agent': 'Xray/26.7.11' } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = await res.text();
  const work = mkdtempSync(join(tmpdir(), 'vad-sub-xray-'));
  const file = join(work, 'config.json');
  writeFileSync(file, body);
  try {
    const checked = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(V2RAY, ['-test', '-config', file], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr })),
    );
    assert.equal(checked.code, 0, checked.out);
    assert.match(checked.out, /Configuration OK/);
    const proc = spawn(V2RAY, ['-config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (b: Buffer) => (out += b.toString()));
    proc.stderr.on('data', (b: Buffer) => (out += b.toString()));
    try {
      await waitUntil(
        () =>
          new Promise<boolean>((resolve) => {
            if (proc.exitCode !== null) return resolve(false);
            const s = connect(LOCAL_PORTS.xraySocks, '127.0.0.1', () => { s.destroy(); resolve(true); });
            s.once('error', () => resolve(false));
          }),
        8000,
        `v2ray to listen (${out})`,
      );
      const before = await downloaded(ids);
      const viaSocks = await curlSocks(LOCAL_PORTS.xraySocks, files.url('/file/f'));
      assert.equal(viaSocks.code, 0, viaSocks.stderr + out);
      assert.equal(sha256(viaSocks.body), sha256(files.files.get('f')!));
      const viaHttp = await curl(['--proxy', `http://127.0.0.1:${LOCAL_PORTS.xrayHttp}`, files.url('/file/f')]);
      assert.equal(viaHttp.code, 0, viaHttp.stderr + out);
      assert.equal(sha256(viaHttp.body), sha256(files.files.get('f')!));
      // Both downloads went through this client's sessions (the balancer picks among them).
      await waitUntil(async () => (await downloaded(ids)) - before >= 2 * MB, 5000, 'the sessions counted both downloads');
    } finally {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await exited;
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('a paused session leaves the feed, and a rotated URL stops working for the client', async () => {
  const [a, b] = await sessionsOf('sub-pause', 2);
  const sub = await api('PUT', '/subscriptions/sub-pause');
  assert.equal((await api('PATCH', `/sessions/${a}/pause`)).status, 200);
  const links = Buffer.from(await (await fetch(`${sub.json.url}?format=base64`)).text(), 'base64').toString('utf8').split('\n');
  assert.deepEqual(links.map((l) => parseVlessLink(l).id), [b]);
  const rotated = await api('PUT', '/subscriptions/sub-pause');
  assert.equal((await fetch(sub.json.url)).status, 404);
  assert.equal((await fetch(rotated.json.url)).status, 200);
});

test('Xray JSON with TLS and the share-link TLS parameters (fp, alpn, pcs, vcn) still passes v2ray -test', async () => {
  const base = buildConfiguration('3f1c2a9e-7b4d-4c1e-9a2f-0123456789ab', {
    publicHost: '203.0.113.7', network: 'ws', wsPort: 8443, tcpPort: null, wsPath: '/vless', tls: true, sni: 'vpn.example.com',
  });
  const c = { ...base, fp: 'chrome', alpn: 'h2,http/1.1', pcs: 'ab'.repeat(32), vcn: 'vpn.example.com' } as Configuration;
  const work = mkdtempSync(join(tmpdir(), 'vad-sub-xray-tls-'));
  const file = join(work, 'config.json');
  writeFileSync(file, JSON.stringify(xrayConfig([{ name: 'n', configuration: c, link: buildLink(c, 'n') }], 't'), null, 2));
  try {
    const checked = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(V2RAY, ['-test', '-config', file], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr })),
    );
    assert.equal(checked.code, 0, checked.out);
    assert.match(checked.out, /Configuration OK/);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('max_devices limits feeds, never connections: a refused device gets no links, the session still carries traffic through v2ray', async () => {
  const [id] = await sessionsOf('sub-devices', 1);
  const sub = await api('PUT', '/subscriptions/sub-devices');
  assert.equal((await api('PATCH', '/customer/limits/client', { max_devices: 1 })).status, 200);
  try {
    const first = await fetch(sub.json.url, { headers: { 'user-agent': 'Happ/3.2.1', 'x-hwid': 'phone-1' } });
    const [link] = Buffer.from(await first.text(), 'base64').toString('utf8').split('\n');
    assert.equal(parseVlessLink(link).id, id);
    const second = await fetch(sub.json.url, { headers: { 'user-agent': 'Happ/3.2.1', 'x-hwid': 'laptop-2' } });
    assert.equal(second.headers.get('x-hwid-max-devices-reached'), 'true');
    assert.equal(await second.text(), '');
    // The data plane never reads max_devices: the link the first device got still carries a download.
    const v = await startV2rayClient(parseVlessLink(link));
    try {
      const r = await curlSocks(v.socksPort, files.url('/file/f'));
      assert.equal(r.code, 0, r.stderr + v.output());
      assert.equal(sha256(r.body), sha256(files.files.get('f')!));
    } finally {
      await v.close();
    }
  } finally {
    assert.equal((await api('DELETE', '/customer/limits/client')).status, 204);
  }
});
