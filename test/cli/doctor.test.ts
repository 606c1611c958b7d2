// `vpn-access doctor` run as a child process against real services: a healthy serve (and its
// GET /v2/doctor), one asked with --url from a machine without its data folder, a hostile one
// answering garbage, a served certificate that differs from the pin in links, an expired
// certificate, a port another process holds, and a cluster node added on PostgreSQL and never
// started. --json is parsed and the exit status asserted (1 exactly when a check fails).
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { get } from 'node:https';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { generate } from 'selfsigned';
import { printedToken, serve, tokenCli } from '../helpers/cli.ts';
import { controlPlane, nodeProcess } from '../helpers/cluster-procs.ts';
import { clockOff } from '../helpers/faketime.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { CLI, NODE, removeDir, ROOT, tempDir } from '../helpers/server.ts';
import { makeCert } from '../helpers/tls.ts';

interface Report {
  checks: { id: string; title: string; status: 'pass' | 'warn' | 'fail'; detail: string; fix: string }[];
  summary: { pass: number; warn: number; fail: number };
}

const childEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VPN_ACCESS_') && !k.startsWith('NODE_TEST')));

/** Runs the doctor (asynchronously: the test's own servers must keep answering meanwhile). */
function doctor(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(NODE, [CLI, 'doctor', ...args], { cwd: ROOT, env: { ...childEnv(), ...extraEnv }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

async function doctorJson(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; report: Report; byId: Map<string, Report['checks'][number]> }> {
  const r = await doctor([...args, '--json'], extraEnv);
  let report: Report;
  try {
    report = JSON.parse(r.stdout) as Report;
  } catch {
    throw new Error(`doctor printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  for (const c of report.checks) {
    assert.deepEqual(Object.keys(c), ['id', 'title', 'status', 'detail', 'fix']);
    assert.ok(c.detail.length > 0, c.id);
    if (c.status !== 'pass') assert.ok(c.fix.length > 0, `${c.id} has a fix`);
  }
  const counted = { pass: 0, warn: 0, fail: 0 };
  for (const c of report.checks) counted[c.status]++;
  assert.deepEqual(report.summary, counted);
  assert.equal(r.code, report.summary.fail > 0 ? 1 : 0, `exit status ${r.code} for ${JSON.stringify(report.summary)}`);
  return { code: r.code, report, byId: new Map(report.checks.map((c) => [c.id, c])) };
}

/** A catalogue of zones this process serves itself (the built-in one has a zone without nodes). */
function localZones(dir: string, extra: object[] = []): string {
  const file = join(dir, 'zones.json');
  writeFileSync(file, JSON.stringify({ zones: [{ code: 'de-fra', name: 'Frankfurt', country: 'DE', nodes: ['local'] }, ...extra] }));
  return file;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
}

/** GET over https, trusting the service's own (self-signed) certificate. */
function getJson(url: string, token: string, ca: Buffer): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    get(url, { ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    }).on('error', reject);
  });
}

const notPassed = (r: Report) => r.checks.filter((c) => c.status !== 'pass').map((c) => `${c.id}: ${c.status} ${c.detail}`);

describe('vpn-access doctor', () => {
  test('a healthy serve with TLS: every check passes (with --url), the people\'s form, and GET /v2/doctor', async () => {
    const d = tempDir();
    const zones = localZones(d);
    const srv = await serve(d, ['--quiet', '--tls', 'on', '--vless-tcp-port', '0', '--proxy-port', '0', '--zones', zones]);
    try {
      const token = printedToken(srv.stdout())!;
      const { code, report, byId } = await doctorJson(['--url', srv.baseUrl, '--token', token, '--data-dir', d, '--zones', zones]);
      assert.equal(code, 0);
      assert.deepEqual(notPassed(report), []);
      for (const id of ['service', 'port-api', 'port-vless-tcp', 'port-proxy', 'public-host', 'tls-mode', 'tls-expiry', 'tls-names', 'tls-pin', 'egress', 'clock', 'database', 'zones', 'cluster']) {
        assert.ok(byId.has(id), `check ${id} is reported`);
      }
      assert.match(byId.get('tls-pin')!.detail, /links pin sha256 [0-9a-f]{64}; every TLS port serves/);
      assert.match(byId.get('database')!.detail, /schema version \d+ \(the latest\)/);

      const people = await doctor(['--url', srv.baseUrl, '--token', token, '--data-dir', d, '--zones', zones]);
      assert.equal(people.code, 0, people.stderr);
      assert.match(people.stdout, /^\[ ok \] Service: answers at https:\/\/127\.0\.0\.1:\d+/m);
      assert.match(people.stdout, /^\d+ passed, 0 warnings, 0 failed: nothing found that stops clients$/m);

      // The route: the same shape, the checks the server can run about itself (no clock), owner only.
      const ca = readFileSync(join(d, 'tls', 'self-signed-cert.pem'));
      const route = await getJson(`${srv.baseUrl}/doctor`, token, ca);
      assert.equal(route.status, 200);
      const served = route.body as Report;
      assert.deepEqual(served.checks.map((c) => c.id), ['port-api', 'port-vless-tcp', 'port-proxy', 'public-host', 'tls-mode', 'tls-expiry', 'tls-names', 'tls-pin', 'egress', 'database', 'zones', 'cluster']);
      assert.deepEqual(served.summary, { pass: 12, warn: 0, fail: 0 }, JSON.stringify(notPassed(served)));
      const agent = tokenCli(['create', '--customer', 'default', '--role', 'agent', '--data-dir', d]);
      assert.equal(agent.status, 0, agent.stderr);
      const refused = await getJson(`${srv.baseUrl}/doctor`, /(vad_\S+)/.exec(agent.stdout)![1], ca);
      assert.equal(refused.status, 403);
    } finally {
      srv.kill();
      await srv.exited;
      removeDir(d);
    }
  });

  test('--url from another machine: the server\'s own setup checks (its database, catalogue, egress); an agent token is told they are this machine\'s', async () => {
    const d = tempDir();
    // The doctor's machine: no data folder of its own, the default catalogue and egress policy.
    const elsewhere = tempDir();
    const away = { XDG_DATA_HOME: elsewhere };
    const srv = await serve(d, ['--quiet', '--vless-tcp-port', '0', '--proxy-port', '0', '--zones', localZones(d), '--egress', 'lan']);
    try {
      const token = printedToken(srv.stdout())!;
      const owner = await doctorJson(['--url', srv.baseUrl, '--token', token], away);
      assert.equal(owner.code, 0);
      assert.deepEqual(notPassed(owner.report), []);
      assert.deepEqual(owner.report.checks.map((c) => c.id), ['service', 'port-api', 'port-vless-tcp', 'port-proxy', 'public-host', 'tls-mode', 'egress', 'clock', 'database', 'zones', 'cluster']);
      assert.match(owner.byId.get('database')!.detail, /^the data folder's database reachable, schema version \d+ \(the latest\)/);
      assert.match(owner.byId.get('zones')!.detail, /^1 zone/);
      assert.equal(owner.byId.get('egress')!.title, 'Egress (lan)');

      const agent = tokenCli(['create', '--customer', 'default', '--role', 'agent', '--data-dir', d]);
      assert.equal(agent.status, 0, agent.stderr);
      const asAgent = await doctorJson(['--url', srv.baseUrl, '--token', /(vad_\S+)/.exec(agent.stdout)![1]], away);
      assert.equal(asAgent.code, 0);
      const unread = asAgent.byId.get('server-checks')!;
      assert.equal(unread.status, 'warn');
      assert.match(unread.detail, /HTTP 403.*this machine's configuration/);
      assert.match(unread.fix, /owner token/);
      assert.equal(asAgent.report.checks[1].id, 'server-checks');
      assert.equal(asAgent.byId.get('database')!.status, 'warn');
      assert.ok(asAgent.byId.get('database')!.detail.includes(join(elsewhere, 'vpn-access')), asAgent.byId.get('database')!.detail);
      assert.equal(asAgent.byId.get('egress')!.title, 'Egress (public-only)');
    } finally {
      srv.kill();
      await srv.exited;
      removeDir(d);
      removeDir(elsewhere);
    }
  });

  test('--url to a server that answers garbage: malformed checks are left out, escape sequences never reach the terminal', async () => {
    const ESC = String.fromCharCode(27);
    const hostile = createHttpServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v2/server-info') {
        const port = (hostile.address() as { port: number }).port;
        res.end(JSON.stringify({ version: `9${ESC}]0;owned${String.fromCharCode(7)}`, api_port: port, public_host: '127.0.0.1', vless_tcp_port: null, proxy_port: null, tls: false,
          tls_status: { mode: 'off', enabled: false, reason: 'off', source: null, self_signed: null, fingerprint_sha256: null } }));
        return;
      }
      res.end(JSON.stringify({ checks: [
        { id: 'database', title: 'Database', status: 'pass', detail: `fine${ESC}[2J${ESC}[31m`, fix: '' },
        { id: 'zones', title: 'Zones', status: 'maybe', detail: 'x', fix: '' },
        { id: 'cluster', title: 'Cluster', status: 'pass', detail: 42, fix: '' },
        'nonsense',
        null,
      ] }));
    });
    const port = await listen(hostile as unknown as Server);
    try {
      const r = await doctor(['--url', `http://127.0.0.1:${port}`, '--token', 'vad_x']);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!r.stdout.includes(ESC), JSON.stringify(r.stdout));
      assert.match(r.stdout, /^\[ ok \] Database: fine /m);
      assert.doesNotMatch(r.stdout, /Zones|Cluster/);
      assert.match(r.stdout, /\(version 9 \]0;owned \)/);
    } finally {
      await new Promise((r) => hostile.close(r));
    }
  });

  test('a served certificate other than the one links pin (the data folder\'s pair replaced after start): tls-pin fails, exit 1', async () => {
    const d = tempDir();
    const certs = tempDir();
    const zones = localZones(d);
    const srv = await serve(d, ['--quiet', '--tls', 'on', '--zones', zones]);
    try {
      const port = new URL(srv.baseUrl).port;
      // Links made from now on (and at the next start) pin this one; the running server still serves the first.
      const other = makeCert(certs, 'other');
      writeFileSync(join(d, 'tls', 'self-signed-cert.pem'), readFileSync(other.cert));
      writeFileSync(join(d, 'tls', 'self-signed-key.pem'), readFileSync(other.key));
      const { code, byId } = await doctorJson(['--data-dir', d, '--port', port, '--tls', 'on', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--zones', zones]);
      assert.equal(code, 1);
      assert.equal(byId.get('service')!.status, 'pass');
      assert.match(byId.get('service')!.detail, /answers at https:\/\/127\.0\.0\.1:/);
      const pin = byId.get('tls-pin')!;
      assert.equal(pin.status, 'fail');
      assert.match(pin.detail, new RegExp(`links pin sha256 [0-9a-f]{64}, but port ${port} serves [0-9a-f]{64}`));
      assert.match(pin.fix, /restart serve/);
      assert.equal(byId.get('port-api')!.status, 'pass');
    } finally {
      srv.kill();
      await srv.exited;
      removeDir(d);
      removeDir(certs);
    }
  });

  test('an expired certificate: tls-expiry fails with its date; one ending within 14 days warns', async () => {
    const d = tempDir();
    const zones = localZones(d);
    const pair = async (name: string, notAfterDate: Date) => {
      const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
        keyType: 'ec', curve: 'P-256', algorithm: 'sha256', notBeforeDate: new Date(notAfterDate.getTime() - 30 * 86_400_000), notAfterDate,
        extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
      });
      const files = { cert: join(d, `${name}.crt`), key: join(d, `${name}.key`) };
      writeFileSync(files.cert, pems.cert);
      writeFileSync(files.key, pems.private);
      return files;
    };
    const expired = await pair('expired', new Date(Date.now() - 2 * 86_400_000));
    const srv = await serve(d, ['--quiet', '--tls-cert', expired.cert, '--tls-key', expired.key, '--zones', zones]);
    try {
      const token = printedToken(srv.stdout())!;
      const { code, byId } = await doctorJson(['--url', srv.baseUrl, '--token', token, '--data-dir', d, '--zones', zones]);
      assert.equal(code, 1);
      const expiry = byId.get('tls-expiry')!;
      assert.equal(expiry.status, 'fail');
      assert.match(expiry.detail, /^expired on \d{4}-\d{2}-\d{2}T/);
      assert.match(expiry.fix, /renew/);
    } finally {
      srv.kill();
      await srv.exited;
    }
    // Not running: the configured files are judged (and the ports must be free).
    const soon = await pair('soon', new Date(Date.now() + 5 * 86_400_000));
    const free = createServer();
    const port = String(await listen(free));
    await new Promise((r) => free.close(r));
    const { code, byId } = await doctorJson(['--data-dir', d, '--port', port, '--vless-tcp-port', 'off', '--proxy-port', 'off', '--tls-cert', soon.cert, '--tls-key', soon.key, '--zones', zones]);
    assert.equal(code, 0);
    assert.equal(byId.get('service')!.status, 'pass');
    assert.match(byId.get('service')!.detail, /not running/);
    assert.equal(byId.get('tls-expiry')!.status, 'warn');
    assert.match(byId.get('tls-expiry')!.detail, /^expires in [45] days/);
    removeDir(d);
  });

  test('a port another process holds while the service is not running: a fail naming the port', async () => {
    const d = tempDir();
    const holder = createServer((socket) => socket.destroy());
    const port = await listen(holder);
    try {
      const { code, byId } = await doctorJson(['--data-dir', d, '--port', String(port), '--vless-tcp-port', 'off', '--proxy-port', 'off', '--zones', localZones(d)]);
      assert.equal(code, 1);
      const api = byId.get('port-api')!;
      assert.equal(api.status, 'fail');
      assert.match(api.detail, new RegExp(`port ${port} is taken by another process`));
      assert.match(api.fix, new RegExp(`--port`));
      assert.equal(byId.get('service')!.status, 'pass');
      assert.equal(byId.get('database')!.status, 'warn'); // no database yet: serve makes it
    } finally {
      await new Promise((r) => holder.close(r));
      removeDir(d);
    }
  });

  test('a cluster on PostgreSQL: a node added and never started fails (zone down); a zone offered without a node warns', async (t) => {
    const pg = await startPostgres(t);
    const d = tempDir();
    try {
      const added = spawnSync(NODE, [CLI, 'node', 'add', '--name', 'syd-1', '--zone', 'au-syd', '--public-host', '127.0.0.2', '--database', pg.url()], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 20_000 });
      assert.equal(added.status, 0, added.stderr);
      const free = createServer();
      const port = String(await listen(free));
      await new Promise((r) => free.close(r));
      const base = ['--database', pg.url(), '--port', port, '--vless-tcp-port', 'off', '--proxy-port', 'off'];
      const down = await doctorJson([...base, '--zones', localZones(d, [{ code: 'au-syd', name: 'Sydney', country: 'AU', nodes: [] }])]);
      assert.equal(down.code, 1);
      assert.equal(down.byId.get('database')!.status, 'pass');
      assert.match(down.byId.get('database')!.detail, /^postgres:\/\/vad:\*\*\*@/);
      const cluster = down.byId.get('cluster')!;
      assert.equal(cluster.status, 'fail');
      assert.match(cluster.detail, /au-syd: every node down \(syd-1 down, last contact never\)/);
      assert.match(cluster.fix, /node run/);

      // No server answers: the clock is compared with PostgreSQL's (milliseconds, not an HTTP Date's seconds).
      const clock = down.byId.get('clock')!;
      assert.equal(clock.status, 'pass', clock.detail);
      assert.match(clock.detail, new RegExp(`^within 5 s of PostgreSQL at 127\\.0\\.0\\.1:${new URL(pg.url()).port} \\(about 0(\\.\\d)? s apart\\)$`));
      // This machine's clock 30 s ahead of the database's (libfaketime moves only the doctor's clock).
      const ahead = await doctorJson([...base, '--zones', localZones(d)], clockOff('+30s'));
      const skewed = ahead.byId.get('clock')!;
      assert.equal(skewed.status, 'warn');
      assert.match(skewed.detail, /^this machine and PostgreSQL at 127\.0\.0\.1:\d+ differ by about (29|30)(\.\d)? s$/);
      assert.match(skewed.fix, /NTP/);

      const missing = await doctorJson([...base, '--zones', localZones(d, [{ code: 'br-sao', name: 'São Paulo', country: 'BR', nodes: [] }])]);
      assert.equal(missing.byId.get('cluster')!.status, 'warn');
      assert.match(missing.byId.get('cluster')!.detail, /br-sao: no node/);

      // PostgreSQL stopped: the database check fails within its time-out, and names the URL without the password.
      await pg.stop();
      const gone = await doctorJson([...base, '--zones', localZones(d)]);
      assert.equal(gone.code, 1);
      assert.equal(gone.byId.get('database')!.status, 'fail');
      assert.doesNotMatch(gone.byId.get('database')!.detail, new RegExp(new URL(pg.url()).password));
    } finally {
      removeDir(d);
    }
  });

  test('a cluster node that runs: its zone is up and its geo relay port answers with the pinned certificate', async (t) => {
    const pg = await startPostgres(t);
    const d = tempDir();
    const cp = await controlPlane('doctor', ['--database', pg.url()]);
    await cp.start();
    const node = await nodeProcess({ name: 'syd-1', zone: 'au-syd', host: '127.0.0.2', database: pg.url(), controls: [`http://127.0.0.1:${cp.port}`] });
    try {
      await node.start();
      const zones = localZones(d, [{ code: 'au-syd', name: 'Sydney', country: 'AU', nodes: [] }]);
      const args = ['--database', pg.url(), '--port', String(cp.port), '--vless-tcp-port', 'off', '--proxy-port', 'off', '--zones', zones];
      let run = await doctorJson(args);
      // The node reports its listeners once its channel is up.
      for (let i = 0; i < 40 && !run.byId.has('port-relay'); i++) {
        await new Promise((r) => setTimeout(r, 250));
        run = await doctorJson(args);
      }
      assert.equal(run.byId.get('service')!.status, 'pass');
      assert.match(run.byId.get('cluster')!.detail, /au-syd: 1\/1 nodes up \(syd-1 up, last contact \d{4}-/);
      const relay = run.byId.get('port-relay')!;
      assert.equal(relay.status, 'pass', relay.detail);
      assert.match(relay.detail, new RegExp(`syd-1 at 127\\.0\\.0\\.2:${node.ports.relay}`));
      // The control plane answered on this machine (one clock): the clock is compared with PostgreSQL's.
      assert.match(run.byId.get('clock')!.detail, /^within 5 s of PostgreSQL at 127\.0\.0\.1:\d+ /);
    } finally {
      await node.stop();
      await cp.stop();
      removeDir(node.dir);
      removeDir(cp.dir);
      removeDir(d);
    }
  });
});
