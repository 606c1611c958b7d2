// The `vpn-access` command line: token create / list / revoke (and what they and node list / remove
// do with a folder that has no database), and serve (first-start token, request log, clean
// shutdown on SIGTERM and SIGINT).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, childEnv, ensureServerBundle, printedToken, runUntil, serve, type ServeProcess, tokenCli } from '../helpers/cli.ts';
import { CLI, NODE, removeDir, ROOT, tempDir, waitFor } from '../helpers/server.ts';

describe('vpn-access token', () => {
  let dir: string;
  before(() => {
    dir = tempDir('vad-cli-');
  });
  after(() => removeDir(dir));

  test('create prints only the token, on one line', () => {
    const r = tokenCli(['create', '--customer', 'acme', '--role', 'owner', '--data-dir', dir]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^vad_[A-Za-z0-9_-]{20,}\n$/);
    // The folder had no database: made, and said so on stderr (a mistyped --data-dir shows).
    assert.equal(r.stderr, `vpn-access: no database in ${dir} yet: made a new one (serve --data-dir ${dir} uses it)\n`);
    const agent = tokenCli(['create', '--customer', 'acme', '--role', 'agent', '--data-dir', dir]);
    assert.equal(agent.status, 0);
    assert.equal(agent.stderr, '');
    assert.notEqual(agent.stdout, r.stdout);
  });

  test('list, revoke, node list and node remove on a folder without a database fail, and make none', () => {
    const missing = join(dir, 'mistyped');
    const commands = [['token', 'list'], ['token', 'revoke', 'vad_x'], ['node', 'list'], ['node', 'remove', 'n1']];
    for (const [command, ...args] of commands) {
      const r = spawnSync(NODE, [CLI, command, ...args, '--data-dir', missing], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 2, `${command} ${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `vpn-access: no database in ${missing}: check --data-dir (serve makes the database at its first start)\n`);
    }
    assert.equal(existsSync(missing), false, 'nothing was made');
  });

  test('the bin launcher works under Node 24 and under an older system node', () => {
    const bin = join(ROOT, 'bin', 'vpn-access.mjs');
    const nodes = [NODE];
    const system = spawnSync('node', ['--version'], { encoding: 'utf8' });
    if (system.status === 0 && Number(/^v(\d+)/.exec(system.stdout)?.[1]) < 24) nodes.push('node');
    for (const node of nodes) {
      const r = spawnSync(node, [bin, 'token', 'create', '--customer', 'bin', '--role', 'agent', '--data-dir', dir], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 0, `${node}: ${r.stderr}`);
      assert.match(r.stdout, /^vad_[A-Za-z0-9_-]{20,}\n$/, node);
    }
  });

  test('list shows tokens without their secret', () => {
    const token = tokenCli(['create', '--customer', 'listed', '--role', 'agent', '--data-dir', dir]).stdout.trim();
    const r = tokenCli(['list', '--data-dir', dir]);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!r.stdout.includes(token), 'the full token is never shown again');
    const line = r.stdout.split('\n').find((l) => l.includes('listed'));
    assert.ok(line, r.stdout);
    assert.ok(line.includes(token.slice(0, 10)), 'a short prefix identifies it');
    assert.match(line, /agent/);
    const json = JSON.parse(tokenCli(['list', '--json', '--data-dir', dir]).stdout) as Record<string, unknown>[];
    assert.ok(json.some((t) => t.customer_name === 'listed' && t.role === 'agent' && t.revoked_at === null));
    assert.ok(!JSON.stringify(json).includes(token));
  });

  test('bad arguments fail with a message and a non-zero status', () => {
    for (const args of [
      ['create', '--role', 'owner', '--data-dir', dir],
      ['create', '--customer', 'x', '--role', 'admin', '--data-dir', dir],
      ['revoke', '--data-dir', dir],
      ['revoke', 'vad_nothing', '--data-dir', dir],
      ['frobnicate', '--data-dir', dir],
    ]) {
      const r = tokenCli(args);
      assert.notEqual(r.status, 0, args.join(' '));
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^vpn-access: /);
    }
  });

  test('revoke (by token, id or prefix) makes the token answer 401 on a running server', async () => {
    const srv = await serve(dir, ['--quiet']);
    try {
      const t1 = tokenCli(['create', '--customer', 'acme', '--role', 'owner', '--data-dir', dir]).stdout.trim();
      const t2 = tokenCli(['create', '--customer', 'acme', '--role', 'agent', '--data-dir', dir]).stdout.trim();
      const t3 = tokenCli(['create', '--customer', 'acme', '--role', 'agent', '--data-dir', dir]).stdout.trim();
      const get = (t: string) => fetch(`${srv.baseUrl}/zones`, { headers: { authorization: `Bearer ${t}` } });
      for (const t of [t1, t2, t3]) assert.equal((await get(t)).status, 200);
      const list = JSON.parse(tokenCli(['list', '--json', '--data-dir', dir]).stdout) as { id: string; prefix: string }[];
      const id2 = list.find((x) => t2.startsWith(x.prefix))!.id;
      const prefix3 = list.find((x) => t3.startsWith(x.prefix))!.prefix;
      for (const ref of [t1, id2, prefix3]) {
        const r = tokenCli(['revoke', ref, '--data-dir', dir]);
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout, /^revoked /);
        assert.ok(!r.stdout.includes(t1));
      }
      // The server caches token look-ups, but sees another process's revocation within ~100 ms.
      for (const t of [t1, t2, t3]) {
        await waitFor(async () => (await get(t)).status === 401, 1000, 'the revocation to take effect');
        const body = (await (await get(t)).json()) as { error: { code: string } };
        assert.equal(body.error.code, 'unauthorized');
      }
      const revokedList = JSON.parse(tokenCli(['list', '--json', '--data-dir', dir]).stdout) as { prefix: string; revoked_at: string | null }[];
      assert.ok(revokedList.filter((x) => x.revoked_at !== null).length >= 3);
      assert.notEqual(tokenCli(['revoke', t1, '--data-dir', dir]).status, 0, 'revoking twice fails');
    } finally {
      srv.kill('SIGTERM');
      await srv.exited;
    }
  });
});

describe('vpn-access serve', () => {
  let dir: string;
  before(() => {
    dir = tempDir('vad-serve-');
  });
  after(() => removeDir(dir));

  test('the first start of an empty data folder prints an owner token once; it works; SIGTERM exits 0', async () => {
    const first = await serve(dir);
    let token: string | undefined;
    try {
      token = printedToken(first.stdout());
      assert.ok(token, first.stdout());
      assert.equal(first.stdout().split(token).length - 1, 1, 'printed exactly once');
      const res = await fetch(`${first.baseUrl}/customer/limits/global`, { headers: { authorization: token } });
      assert.equal(res.status, 404, 'an owner token: limits are reachable (none set yet)');
      const created = await fetch(`${first.baseUrl}/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'cli', zone: 'de-fra' }),
      });
      assert.equal(created.status, 201);
      const session = (await created.json()) as { id: string; configuration: { port: number } };
      assert.equal(session.configuration.port, Number(new URL(first.baseUrl).port), 'the link points at the real port');
      // One readable line per request, with the id cut short.
      await waitFor(() => /POST \/v2\/sessions 201/.test(first.stdout()), 3000, 'the request log line');
      await fetch(`${first.baseUrl}/sessions/${session.id}/status`, { headers: { authorization: token } });
      await waitFor(() => /GET \/v2\/sessions\/\S+\/status 200/.test(first.stdout()), 3000, 'the status log line');
      assert.ok(!first.stdout().includes(session.id), 'a full session id is never logged');
      assert.ok(!first.stdout().split(token).slice(1).join('').includes(token), 'the token is not logged');
    } finally {
      first.kill('SIGTERM');
    }
    const exit = await first.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, first.stderr());

    const second = await serve(dir);
    try {
      assert.equal(printedToken(second.stdout()), undefined, 'no new token on the second start');
      assert.ok(!second.stdout().includes('owner token'));
      const res = await fetch(`${second.baseUrl}/sessions`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200, 'the first token still works');
      assert.equal(((await res.json()) as { sessions: unknown[] }).sessions.length, 1);
    } finally {
      second.kill('SIGINT');
    }
    assert.deepEqual(await second.exited, { code: 0, signal: null }, 'SIGINT exits 0 too');
  });

  test('a first start whose port is taken makes no token; the next start prints it, a signed-in web-UI address and the command that makes another', async () => {
    const d = tempDir('vad-first-');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    try {
      const busy = (taken.address() as AddressInfo).port;
      await assert.rejects(serve(d, ['--port', String(busy)]), /exited early[\s\S]*already in use/);
      // Started by hand: the helper turns the web UI off, and the address is printed only with it.
      const child = spawn(NODE, [CLI, 'serve', '--data-dir', d, '--host', '127.0.0.1', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--quiet'], {
        cwd: ROOT,
        env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VPN_ACCESS_') && !k.startsWith('NODE_TEST'))),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
      const exited = new Promise((r) => child.once('exit', r));
      try {
        await waitFor(() => /listening: API/.test(out), 20_000, 'the second start listening');
        const token = printedToken(out);
        assert.ok(token, `the failed start made no token, so this one does and prints it:\n${out}`);
        const link = /Open the web UI signed in: (\S+)/.exec(out)?.[1];
        assert.ok(link, out);
        const api = /listening: API (\S+)\/v2,/.exec(out)![1];
        assert.equal(link, `${api}/#token=${token}`);
        const res = await fetch(`${api}/v2/customer/limits/global`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(res.status, 404, 'an owner token (limits reachable, none set)');
        // The command printed is complete: run as printed, it makes a working owner token.
        const command = /Lost it\? Make another: (.+)$/m.exec(out)?.[1];
        assert.equal(command, `vpn-access token create --customer default --role owner --data-dir ${d}`);
        const made = tokenCli(command!.split(' ').slice(2));
        assert.equal(made.status, 0, made.stderr);
        const again = await fetch(`${api}/v2/customer/limits/global`, { headers: { authorization: `Bearer ${made.stdout.trim()}` } });
        assert.equal(again.status, 404);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    } finally {
      taken.close();
      removeDir(d);
    }
  });

  test('every hint naming `vpn-access token create` (CLI messages, the web UI) is a complete command', () => {
    const files = ['renderer/src/App.tsx', 'server/cli/serve.ts', 'server/cli/shared.ts', 'server/cli/token.ts'];
    for (const f of files) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/vpn-access token create(?![|\w])[^`<'"\n]*/g)) {
        assert.match(m[0], /--customer \S+ --role (owner|agent)/, `${f}: "${m[0]}"`);
      }
    }
  });

  test('SIGTERM closes open event streams and exits 0 promptly', async () => {
    const d = tempDir('vad-term-');
    const srv = await serve(d, ['--quiet']);
    try {
      const token = printedToken(srv.stdout())!;
      const ctl = new AbortController();
      const res = await fetch(`${srv.baseUrl}/sessions/events`, { headers: { authorization: token }, signal: ctl.signal });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      await reader.read();
      const started = Date.now();
      srv.kill('SIGTERM');
      const exit = await srv.exited;
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.ok(Date.now() - started < 5000, 'no hang on open streams');
      ctl.abort();
    } finally {
      srv.kill('SIGKILL');
      removeDir(d);
    }
  });

  test('bad options fail with a message', async () => {
    const d = tempDir('vad-bad-');
    try {
      await assert.rejects(serve(d, ['--rate-limit', 'lots']), /exited early[\s\S]*rate-limit/);
      await assert.rejects(serve(d, ['--link-network', 'udp']), /exited early[\s\S]*link-network/);
      await assert.rejects(serve(d, ['--read-cache', 'yes']), /exited early[\s\S]*--read-cache takes on or off/);
      await assert.rejects(serve(d, ['--read-cache', 'on']), /exited early[\s\S]*--read-cache applies to --database/);
      await assert.rejects(serve(d, ['--public-host', 'http://vpn.example.com']), /exited early[\s\S]*--public-host takes the host name or address clients connect to .*not "http:\/\/vpn\.example\.com"/);
      await assert.rejects(serve(d, ['--log-format', 'yaml']), /exited early[\s\S]*--log-format takes text or json, not "yaml"/);
    } finally {
      removeDir(d);
    }
  });

  test('--log-format json: stdout is one JSON object a line, the request log too; the first start\'s token goes to stderr', async () => {
    const d = tempDir('vad-json-log-');
    try {
      const s = await serve(d, ['--log-format', 'json']);
      let token: string | undefined;
      try {
        token = printedToken(s.stderr());
        assert.ok(token, s.stderr());
        assert.equal((await fetch(`${s.baseUrl}/zones`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
        await waitFor(() => /GET \/v2\/zones 200/.test(s.stdout()), 3000, 'the request log line');
      } finally {
        s.kill('SIGTERM');
      }
      assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr());
      const records = s.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { time: string; level: string; msg: string });
      for (const r of records) assert.ok(!Number.isNaN(Date.parse(r.time)) && ['info', 'warn', 'error'].includes(r.level) && typeof r.msg === 'string', JSON.stringify(r));
      assert.ok(records.some((r) => r.msg.startsWith('listening: API ')));
      assert.ok(records.some((r) => r.msg.startsWith('GET /v2/zones 200')));
      assert.ok(records.some((r) => r.msg === 'SIGTERM: shutting down'));
      assert.ok(!s.stdout().includes(token!), 'the token is never in the shipped log');
    } finally {
      removeDir(d);
    }
  });

  test('a data folder, zone catalogue, database or certificate it cannot use: the message names it and says what is wrong', async () => {
    const d = tempDir('vad-files-');
    try {
      const file = join(d, 'a-file');
      writeFileSync(file, '');
      // serve(dir, ...) passes --data-dir dir first; a later --data-dir wins.
      await assert.rejects(serve(d, ['--data-dir', file]), new RegExp(`exited early[\\s\\S]*--data-dir ${file}: not a folder \\(EEXIST`));
      await assert.rejects(serve(d, ['--zones', file]), new RegExp(`exited early[\\s\\S]*zone catalogue ${file} is not valid JSON`));
      await assert.rejects(serve(d, ['--zones', join(d, 'missing.json')]), /exited early[\s\S]*zone catalogue \S+missing\.json cannot be read: ENOENT/);
      const db = spawnSync(NODE, [CLI, 'serve', '--database', 'postgres://vad:secret@127.0.0.1:1/vad', '--port', '0'], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 20_000 });
      assert.equal(db.status, 2, db.stderr);
      assert.equal(db.stderr, 'vpn-access: cannot use the database at postgres://vad:***@127.0.0.1:1/vad: The database is unreachable; retry shortly.\n');
      await assert.rejects(serve(d, ['--tls-cert', file, '--tls-key', file]), new RegExp(`exited early[\\s\\S]*unusable TLS certificate in ${file} and ${file}: not PEM \\(no "-----BEGIN" line\\)`));
    } finally {
      removeDir(d);
    }
  });

  test('--trust-proxy: checked, and a trusted proxy\'s X-Forwarded-For is the client the subscription miss limit counts', async () => {
    const d = tempDir('vad-tp-');
    try {
      await assert.rejects(serve(d, ['--trust-proxy', 'loopback,10.0.0.0/99']), /exited early[\s\S]*--trust-proxy[\s\S]*10\.0\.0\.0\/99/);
      await assert.rejects(serve(d, ['--trust-proxy', 'my-proxy']), /exited early[\s\S]*--trust-proxy/);
      const srv = await serve(d, ['--quiet', '--trust-proxy', 'loopback,10.0.0.0/8']);
      try {
        const miss = async (client: string) => {
          const res = await fetch(`${new URL(srv.baseUrl).origin}/sub/${'Q'.repeat(43)}`, { headers: { 'x-forwarded-for': client } });
          await res.arrayBuffer();
          return res.status;
        };
        for (let i = 0; i < 9; i++) assert.equal(await miss('198.51.100.7'), 404);
        assert.equal(await miss('198.51.100.7'), 429);
        assert.equal(await miss('198.51.100.8'), 404, 'counted by the client the proxy names');
      } finally {
        srv.kill('SIGTERM');
        await srv.exited;
      }
    } finally {
      removeDir(d);
    }
  });

  test('--rate-limit is honoured', async () => {
    const d = tempDir('vad-rl-');
    const srv: ServeProcess = await serve(d, ['--quiet', '--rate-limit', '3/60']);
    try {
      const token = printedToken(srv.stdout())!;
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 4; i++) {
        last = await fetch(`${srv.baseUrl}/zones`, { headers: { authorization: token } });
        statuses.push(last.status);
        await last.arrayBuffer();
      }
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      assert.equal(last!.headers.get('x-ratelimit-limit'), '3');
      assert.ok(Number(last!.headers.get('retry-after')) >= 1);
    } finally {
      srv.kill('SIGTERM');
      await srv.exited;
      removeDir(d);
    }
  });
});

describe('vpn-access from the bundle (dist/server/cli.mjs, what the bin runs after npm run build)', () => {
  let dir: string;
  before(() => {
    ensureServerBundle();
    dir = tempDir('vad-bundle-');
  });
  after(() => removeDir(dir));

  test('serve starts, answers the API and reads its files from the app root', async () => {
    const srv = await serve(dir, [], 20_000, 'bundle');
    try {
      const token = printedToken(srv.stdout());
      assert.ok(token, srv.stdout());
      const doc = await fetch(`${srv.baseUrl}/openapi.json`);
      assert.equal(doc.status, 200);
      const api = (await doc.json()) as { openapi: string; paths: Record<string, unknown> };
      assert.match(api.openapi, /^3\./);
      assert.ok('/v2/sessions' in api.paths || '/sessions' in api.paths, Object.keys(api.paths).join(' '));
      // The version comes from package.json, found relative to the source path, not dist/.
      const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      const info = (await (await fetch(`${srv.baseUrl}/server-info`, { headers: { authorization: `Bearer ${token}` } })).json()) as { version: string };
      assert.equal(info.version, pkg.version);
      // The built-in zone catalogue (server/zones/default-zones.json) is inside the bundle.
      const zones = await fetch(`${srv.baseUrl}/zones`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(zones.status, 200);
      assert.match(JSON.stringify(await zones.json()), /de-fra/);
      const created = await fetch(`${srv.baseUrl}/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'bundle', zone: 'de-fra' }),
      });
      assert.equal(created.status, 201);
    } finally {
      srv.kill('SIGTERM');
    }
    assert.deepEqual(await srv.exited, { code: 0, signal: null });
  });

  test('what the server loads on first use works from the bundle: the self-signed certificate, Clash YAML, the subscription page', async () => {
    const d = tempDir('vad-bundle-lazy-');
    const srv = await serve(d, ['--tls', 'on'], 20_000, 'bundle');
    try {
      assert.match(srv.baseUrl, /^https:/);
      const token = printedToken(srv.stdout())!;
      process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'; // the self-signed certificate just made, on loopback
      const H = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      assert.equal((await fetch(`${srv.baseUrl}/sessions`, { method: 'POST', headers: H, body: JSON.stringify({ client_id: 'lazy', zone: 'de-fra' }) })).status, 201);
      const sub = (await (await fetch(`${srv.baseUrl}/subscriptions/lazy`, { method: 'PUT', headers: { authorization: H.authorization } })).json()) as { url: string };
      const clash = await fetch(`${sub.url}?format=clash`);
      assert.equal(clash.status, 200);
      assert.match(await clash.text(), /^proxies:\n {2}- name: /m);
      const page = await fetch(sub.url, { headers: { accept: 'text/html' } });
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<svg|data:image\/png/, 'the page has its QR code');
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      srv.kill('SIGTERM');
      await srv.exited;
      removeDir(d);
    }
  });

  test('node run starts from the bundle: its geo relay\'s certificate and TLS on its listeners are made there too', async () => {
    const d = tempDir('vad-bundle-node-');
    try {
      await runUntil([NODE, BIN, 'node', 'run', '--control', 'http://127.0.0.1:9', '--token', `vadn_${'x'.repeat(40)}`, '--host', '127.0.0.1', '--port', '0',
        '--vless-tcp-port', '0', '--proxy-port', '0', '--relay-port', '0', '--tls', 'on', '--data-dir', d], { VPN_ACCESS_LAUNCH: 'bundle' },
        /node listening: VLESS wss 127\.0\.0\.1:\d+, tcp \d+, proxy \d+, geo relay \d+; TLS on \(self-signed, sha256 [0-9a-f]{64}\)/, 20_000);
    } finally {
      removeDir(d);
    }
  });

  test('--version prints the package version, from the sources and from the bundle', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const launch of ['source', 'bundle']) {
      const r = spawnSync(NODE, [BIN, '--version'], { env: { ...childEnv(), VPN_ACCESS_LAUNCH: launch }, encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, `vpn-access ${pkg.version}\n`, launch);
    }
  });

  test('token commands run from the bundle too', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, VPN_ACCESS_LAUNCH: 'bundle' };
    delete env.VPN_ACCESS_DATA_DIR;
    const r = spawnSync(NODE, [BIN, 'token', 'create', '--customer', 'bundled', '--role', 'agent', '--data-dir', dir], { env, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^vad_[A-Za-z0-9_-]{20,}\n$/);
    const list = spawnSync(NODE, [BIN, 'token', 'list', '--data-dir', dir], { env, encoding: 'utf8', timeout: 20_000 });
    assert.equal(list.status, 0, list.stderr);
    assert.match(list.stdout, /bundled/);
  });
});
