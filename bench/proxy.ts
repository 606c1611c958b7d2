// Proxy-port benchmark (not a test): `npm run bench -- proxy`.
// Our proxy port (HTTP and SOCKS5, a data plane in a child process with a session, counting on)
// beside Debian's tinyproxy and squid (HTTP, Basic auth on) and microsocks (SOCKS5, user/password
// on) and dante (SOCKS5 without authentication: its password check needs a system account),
// carrying the same load in the same run against the same local HTTP target:
//   - requests/s of small (1 KiB) GETs, one request per connection (our proxy closes after each
//     answer), CONCURRENCY connections at a time: absolute-URI through the HTTP proxies, and
//     CONNECT-less SOCKS5 (handshake, request, GET) through the SOCKS5 ones;
//   - the same absolute-URI GETs through a trivial Node relay (no parsing, auth or counting: it
//     forwards the first chunk to the target and pipes), the floor a Node proxy starts from;
//   - throughput of a FILE_MIB download with curl through an HTTP CONNECT tunnel and SOCKS5
//     CONNECT (best of TRANSFERS).
// A baseline whose binary is missing is skipped with a message (apt-get install tinyproxy microsocks squid dante-server).
// Env: BENCH_SECONDS per request figure (5), BENCH_CONCURRENCY (32), BENCH_FILE_MIB (256), BENCH_TRANSFERS (3).
import { spawn, spawnSync, execFile, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const MiB = 1024 * 1024;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const FILE_MIB = Number(process.env.BENCH_FILE_MIB ?? 256);
const TRANSFERS = Math.max(1, Number(process.env.BENCH_TRANSFERS ?? 3));

async function child(cmd: string, args: string[]): Promise<{ proc: ChildProcess; info: any }> {
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const rl = createInterface({ input: proc.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${cmd} did not start`)), 15000);
    rl.once('line', (l) => { clearTimeout(t); resolve(l); });
  });
  return { proc, info: JSON.parse(line) };
}

/** Starts a baseline server and waits for its port to accept connections. */
async function daemon(cmd: string, args: string[], port: number): Promise<ChildProcess> {
  const proc = spawn(cmd, args, { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((r) => {
      const s = connect(port, '127.0.0.1', () => { s.destroy(); r(true); });
      s.on('error', () => r(false));
    });
    if (up) return proc;
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill();
  throw new Error(`${cmd} did not listen on ${port}`);
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The bytes a client sends for one small GET: plain through an HTTP proxy, or after a SOCKS5 handshake. */
type Script = { first: Buffer; socks?: { auth?: Buffer; request: Buffer; get: Buffer } };

function httpScript(targetPort: number, user: string, pass: string): Script {
  const auth = Buffer.from(`${user}:${pass}`).toString('base64');
  return { first: Buffer.from(`GET http://127.0.0.1:${targetPort}/small HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nProxy-Authorization: Basic ${auth}\r\nConnection: close\r\n\r\n`) };
}

/** SOCKS5 with RFC 1929 user/password, or without authentication when `user` is null. */
function socksScript(targetPort: number, user: string | null, pass = ''): Script {
  const u = Buffer.from(user ?? ''), p = Buffer.from(pass);
  return {
    first: Buffer.from([5, 1, user === null ? 0 : 2]),
    socks: {
      auth: user === null ? undefined : Buffer.concat([Buffer.from([1, u.length]), u, Buffer.from([p.length]), p]),
      request: Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, targetPort >> 8, targetPort & 255]),
      get: Buffer.from(`GET /small HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nConnection: close\r\n\r\n`),
    },
  };
}

/** One request on a new connection; resolves with the bytes received (0: failed). */
function once1(port: number, s: Script): Promise<number> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    // SOCKS5: each answer's size (method 2, auth status 2, reply 10 for IPv4) and what follows it.
    const steps = s.socks ? [...(s.socks.auth ? [{ need: 2, send: s.socks.auth }] : []), { need: 2, send: s.socks.request }, { need: 10, send: s.socks.get }] : [];
    let got = 0, stage = 0, pending = 0;
    sock.setNoDelay(true);
    sock.on('connect', () => sock.write(s.first));
    sock.on('data', (b: Buffer) => {
      if (stage === steps.length) { got += b.length; return; }
      pending += b.length;
      while (stage < steps.length && pending >= steps[stage].need) {
        pending -= steps[stage].need;
        sock.write(steps[stage++].send);
      }
      if (stage === steps.length) got += pending;
    });
    sock.on('error', () => {});
    sock.on('close', () => resolve(got));
  });
}

/** Requests/s over SECONDS with CONCURRENCY loops, each opening a connection per request. */
async function requestsPerSecond(port: number, s: Script): Promise<{ rps: number; failed: number }> {
  const end = performance.now() + SECONDS * 1000;
  let ok = 0, failed = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < end) {
      const n = await once1(port, s);
      if (n > 1024) ok++;
      else failed++;
    }
  }));
  return { rps: ok / SECONDS, failed };
}

function curlRate(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-s', '-o', '/dev/null', '--max-time', '120', '-w', '%{size_download} %{time_total}', ...args], (err, stdout) => {
      const [bytes, total] = stdout.trim().split(' ').map(Number);
      if (err || bytes !== FILE_MIB * MiB) return reject(new Error(`curl ${args.join(' ')}: ${err?.message ?? bytes}`));
      resolve(bytes / MiB / total);
    });
  });
}

async function best(args: string[]): Promise<number> {
  let top = 0;
  for (let i = 0; i < TRANSFERS; i++) top = Math.max(top, await curlRate(args));
  return top;
}

const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 });

function line(name: string, ours: number, unit: string, base: { name: string; value: number } | string): void {
  const right = typeof base === 'string' ? base : `${base.name} ${fmt(base.value)} ${unit} | ratio ${(ours / base.value).toFixed(2)}`;
  console.log(`${name.padEnd(40)} ${fmt(ours).padStart(8)} ${unit} | ${right}`);
}

/** The Debian proxies to measure against (each skipped when not installed). */
async function startBaselines(dir: string, cleanup: (() => void)[]): Promise<Partial<Record<'tiny' | 'micro' | 'squid' | 'dante', number>>> {
  const ports: Partial<Record<'tiny' | 'micro' | 'squid' | 'dante', number>> = {};
  const start = async (key: keyof typeof ports, bin: string, args: (port: number) => string[], conf?: (port: number) => [string, string]) => {
    if (!existsSync(bin)) return console.log(`${bin} not installed (apt-get install -y tinyproxy microsocks squid dante-server): that baseline is skipped`);
    const port = await freePort();
    if (conf) writeFileSync(...conf(port));
    const p = await daemon(bin, args(port), port);
    cleanup.push(() => p.kill());
    ports[key] = port;
  };
  const file = (name: string) => join(dir, name);
  await start('tiny', '/usr/bin/tinyproxy', () => ['-d', '-c', file('tinyproxy.conf')], (port) => [file('tinyproxy.conf'), `Port ${port}\nListen 127.0.0.1\nTimeout 600\nMaxClients 1024\nLogLevel Critical\nDisableViaHeader Yes\nBasicAuth bench bench\n`]);
  await start('micro', '/usr/bin/microsocks', (port) => ['-i', '127.0.0.1', '-p', String(port), '-u', 'bench', '-P', 'bench']);
  // squid runs its workers as the `proxy` user: the folder it writes must be theirs to write.
  chmodSync(dir, 0o777);
  writeFileSync(file('squid.passwd'), `bench:${spawnSync('openssl', ['passwd', '-apr1', 'bench'], { encoding: 'utf8' }).stdout.trim()}\n`);
  await start('squid', '/usr/sbin/squid', () => ['-N', '-f', file('squid.conf')], (port) => [file('squid.conf'), [
    `http_port 127.0.0.1:${port}`, `auth_param basic program /usr/lib/squid/basic_ncsa_auth ${file('squid.passwd')}`, 'acl authed proxy_auth REQUIRED',
    'http_access allow authed', 'http_access deny all', 'cache deny all', 'access_log none', `cache_log ${file('squid.log')}`, `pid_filename ${file('squid.pid')}`, 'shutdown_lifetime 0 seconds', '',
  ].join('\n')]);
  // dante checks user/password against the system's accounts (PAM): rather than make one, it runs
  // without authentication, which only favours it.
  await start('dante', '/usr/sbin/danted', () => ['-f', file('danted.conf')], (port) => [file('danted.conf'), [
    `logoutput: ${file('danted.log')}`, `internal: 127.0.0.1 port = ${port}`, 'external: 127.0.0.1', 'socksmethod: none', 'user.privileged: root', 'user.unprivileged: nobody',
    'client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }', 'socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect }', '',
  ].join('\n')]);
  return ports;
}

async function main(): Promise<void> {
  const cleanup: (() => void)[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'vad-bench-proxy-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const self = new URL(import.meta.url).pathname;
    const target = await child(process.execPath, [self, '--target']);
    cleanup.push(() => target.proc.kill());
    const ours = await child(process.execPath, [self, '--ours']);
    cleanup.push(() => ours.proc.kill());
    const tp = target.info.port as number, op = ours.info.proxyPort as number, id = ours.info.id as string;
    const { tiny, micro, squid, dante } = await startBaselines(dir, cleanup);

    console.log(`\n== proxy port: ${CONCURRENCY} connections, one 1 KiB GET per connection, ${SECONDS} s each ==`);
    await requestsPerSecond(op, httpScript(tp, id, id)); // warm-up
    const oursHttp = await requestsPerSecond(op, httpScript(tp, id, id));
    const tinyHttp = tiny ? await requestsPerSecond(tiny, httpScript(tp, 'bench', 'bench')) : undefined;
    line('absolute-URI GET, ours', oursHttp.rps, 'req/s', tinyHttp ? { name: 'tinyproxy', value: tinyHttp.rps } : 'tinyproxy skipped');
    const floor = await child(process.execPath, [self, '--floor', String(tp)]);
    cleanup.push(() => floor.proc.kill());
    const floorHttp = await requestsPerSecond(floor.info.port, httpScript(tp, id, id));
    floor.proc.kill();
    line('absolute-URI GET, ours', oursHttp.rps, 'req/s', { name: 'trivial Node relay', value: floorHttp.rps });
    const oursSocks = await requestsPerSecond(op, socksScript(tp, id, id));
    const microSocks = micro ? await requestsPerSecond(micro, socksScript(tp, 'bench', 'bench')) : undefined;
    line('SOCKS5 CONNECT + GET, ours', oursSocks.rps, 'req/s', microSocks ? { name: 'microsocks', value: microSocks.rps } : 'microsocks skipped');
    const squidHttp = squid ? await requestsPerSecond(squid, httpScript(tp, 'bench', 'bench')) : undefined;
    line('absolute-URI GET, ours', oursHttp.rps, 'req/s', squidHttp ? { name: 'squid', value: squidHttp.rps } : 'squid skipped');
    const danteSocks = dante ? await requestsPerSecond(dante, socksScript(tp, null)) : undefined;
    line('SOCKS5 CONNECT + GET, ours', oursSocks.rps, 'req/s', danteSocks ? { name: 'dante (no auth)', value: danteSocks.rps } : 'dante skipped');
    console.log(`failed requests: ours http ${oursHttp.failed}, ours socks5 ${oursSocks.failed}, tinyproxy ${tinyHttp?.failed ?? '-'}, microsocks ${microSocks?.failed ?? '-'}, squid ${squidHttp?.failed ?? '-'}, dante ${danteSocks?.failed ?? '-'}`);

    console.log(`\n== ${FILE_MIB} MiB download with curl, best of ${TRANSFERS} ==`);
    const url = `http://127.0.0.1:${tp}/big`;
    const direct = await best([url]);
    const oursConnect = await best(['-p', '-x', `http://127.0.0.1:${op}`, '-U', `${id}:${id}`, url]);
    const tinyConnect = tiny ? await best(['-p', '-x', `http://127.0.0.1:${tiny}`, '-U', 'bench:bench', url]) : undefined;
    line('HTTP CONNECT tunnel, ours', oursConnect, 'MiB/s', tinyConnect ? { name: 'tinyproxy', value: tinyConnect } : 'tinyproxy skipped');
    const oursS5 = await best(['--socks5', `127.0.0.1:${op}`, '--proxy-user', `${id}:${id}`, url]);
    const microS5 = micro ? await best(['--socks5', `127.0.0.1:${micro}`, '--proxy-user', 'bench:bench', url]) : undefined;
    line('SOCKS5 CONNECT, ours', oursS5, 'MiB/s', microS5 ? { name: 'microsocks', value: microS5 } : 'microsocks skipped');
    const squidConnect = squid ? await best(['-p', '-x', `http://127.0.0.1:${squid}`, '-U', 'bench:bench', url]) : undefined;
    line('HTTP CONNECT tunnel, ours', oursConnect, 'MiB/s', squidConnect ? { name: 'squid', value: squidConnect } : 'squid skipped');
    const danteS5 = dante ? await best(['--socks5', `127.0.0.1:${dante}`, url]) : undefined;
    line('SOCKS5 CONNECT, ours', oursS5, 'MiB/s', danteS5 ? { name: 'dante (no auth)', value: danteS5 } : 'dante skipped');
    line('direct (ceiling)', direct, 'MiB/s', 'no proxy');
  } finally {
    for (const c of cleanup.reverse()) c();
  }
}

// ---- child modes -------------------------------------------------------------------------
if (process.argv[2] === '--target') {
  const big = Buffer.alloc(FILE_MIB * MiB, 7);
  const small = Buffer.alloc(1024, 1);
  const srv = createServer((req, res) => {
    const b = req.url?.startsWith('/big') ? big : small;
    res.setHeader('Content-Length', b.length);
    res.end(b);
  });
  srv.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (srv.address() as { port: number }).port })));
} else if (process.argv[2] === '--floor') {
  const targetPort = Number(process.argv[3]);
  const srv = createNetServer({ allowHalfOpen: true, noDelay: true }, (c) => {
    c.on('error', () => {});
    c.once('data', (b: Buffer) => {
      const o = connect({ port: targetPort, host: '127.0.0.1', noDelay: true }, () => {
        o.write(b);
        o.pipe(c);
        c.pipe(o);
      });
      o.on('error', () => c.destroy());
    });
  });
  srv.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (srv.address() as { port: number }).port })));
} else if (process.argv[2] === '--ours') {
  const { startHarness } = await import('../test/dataplane/helpers/harness.ts');
  // many connections per second from one session: the per-session connection limits raised
  const h = await startHarness({ statsIntervalMs: 5000, heartbeatIntervalMs: 30000, connectionRatePerSecond: 1e6, connectionBurst: 1e6, maxConnectionsPerSession: 1e6, reconnectGraceMs: 2000 });
  const id = h.mem.createSession({ customer: 'bench', reusable: true });
  console.log(JSON.stringify({ proxyPort: h.proxyPort, id }));
} else {
  await main();
}
