// `vpn-access serve --host`: a wildcard bind (0.0.0.0, ::) names a usable public host in links
// (never 127.0.0.1), and clear text (no TLS) is refused beyond the local network. No test here
// listens beyond loopback: the wildcard case is run against a port already taken on loopback,
// so the process logs its choice and then fails to bind.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { choosePublicHost, clearTextReach } from '../../server/public-host.ts';
import { decideTls } from '../../server/tls/mode.ts';
import { serve } from '../helpers/cli.ts';
import { CLI, NODE, removeDir, ROOT, tempDir } from '../helpers/server.ts';

function run(dataDir: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_') || k.startsWith('NODE_TEST')) delete env[k];
  const r = spawnSync(NODE, [CLI, 'serve', '--data-dir', dataDir, '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--no-ui', ...args], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('vpn-access serve --host', () => {
  let dir: string;
  before(() => {
    dir = tempDir('vad-host-');
  });
  after(() => removeDir(dir));

  test('--host 0.0.0.0 names the first non-internal interface address in links, not 127.0.0.1', async () => {
    // Hold a loopback port: the wildcard bind on it fails after the choice is logged.
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as AddressInfo).port;
    try {
      const r = run(dir, ['--host', '0.0.0.0', '--port', String(port)]);
      const ifaces = networkInterfaces();
      const expected = choosePublicHost('0.0.0.0', ifaces);
      if (expected === null) {
        assert.equal(r.status, 2, r.stderr);
        assert.match(r.stderr, /no network interface has an address other machines can use.*--public-host/);
      } else if (!decideTls('auto', expected).enabled && clearTextReach('0.0.0.0', expected, ifaces) === 'internet') {
        assert.equal(r.status, 2, r.stderr);
        assert.match(r.stderr, /refusing to serve without TLS beyond the local network/);
      } else {
        assert.match(r.stdout, new RegExp(`public host: ${expected.replaceAll('.', '\\.')} \\(the first non-internal interface address`), r.stdout + r.stderr);
        assert.match(r.stderr, /a port is already in use/);
        assert.doesNotMatch(r.stdout, /public host: 127\.0\.0\.1/);
      }
    } finally {
      holder.close();
    }
  });

  test('clear text beyond the local network is refused before anything listens', () => {
    for (const args of [
      ['--host', '203.0.113.5', '--tls', 'off'],
      ['--host', '0.0.0.0', '--tls', 'off', '--public-host', 'vpn.example.com'],
      ['--host', '192.168.77.1', '--tls', 'off', '--public-host', 'vpn.example.com'],
    ]) {
      const r = run(dir, args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /refusing to serve without TLS beyond the local network/, args.join(' '));
      assert.match(r.stderr, /--tls on/);
      assert.doesNotMatch(r.stdout, /listening/);
    }
  });

  test('loopback with a public name (behind a TLS-terminating proxy) is allowed, without the clear-text warning', async () => {
    const p = await serve(dir, ['--tls', 'off', '--public-host', 'vpn.example.com']);
    try {
      assert.match(p.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v2$/);
      const info = (await (await fetch(`${p.baseUrl}/server-info`, { headers: { authorization: 'Bearer x' } })).status);
      assert.equal(info, 401);
      assert.doesNotMatch(p.stdout(), /WARNING/);
    } finally {
      p.kill();
      await p.exited;
    }
  });

  test('--http-timeouts takes four whole seconds, headers within request', () => {
    for (const [value, why] of [['1/2', /HEADERS\/REQUEST\/KEEPALIVE\/IDLE/], ['20/10/65/120', /cannot exceed the request timeout/], ['0/30/65/120', /HEADERS\/REQUEST/]] as const) {
      const r = run(dir, ['--host', '127.0.0.1', '--http-timeouts', value]);
      assert.equal(r.status, 2, value);
      assert.match(r.stderr, why, value);
    }
  });
});
