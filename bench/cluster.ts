// Cluster benchmark (not a test): `node bench/cluster.ts`, also `npm run bench -- cluster`.
// Each figure beside its baseline measured in the same run:
//  - authenticated reads (GET /v2/sessions/{id}/status) and session creation (POST /v2/sessions)
//    on SQLite (the baseline), on one `serve --database` instance (its read cache on, the
//    default), and on two instances at once (the load split between them): the scale-out ratio is
//    two over one; reads are also measured on an instance with `--read-cache off`. On a 2-core machine the
//    two instances, PostgreSQL and the load generator share the same cores, so the ratio here is a
//    floor, not what separate machines give;
//  - pause on instance B to the cut of a connection carried by a node connected to instance A
//    (p50, p99 over BENCH_PAUSES rounds);
//  - report lag: from a burst of bytes through the node to the API on instance B showing them
//    (p50, p99 over BENCH_LAGS rounds);
//  - the geo proxy relayed node to node: a download through the São Paulo node's proxy with
//    `-cc-AU` (relayed over TLS to the Sydney node, which dials the origin) beside the same
//    download leaving from the São Paulo node itself (`-cc-BR`), median of BENCH_GEO_RUNS;
//  - bytes lost per `kill -9` of a node moving data at full speed, beside the 1 MiB bound
//    (bench/node-kill.ts).
// Servers and the node are child processes (`vpn-access serve` / `node run`), PostgreSQL a
// throwaway server (test/helpers/postgres.ts). Env: BENCH_SECONDS (6), BENCH_ROUNDS (3), BENCH_PAUSES (20), BENCH_LAGS (10).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import autocannon from 'autocannon';
import { buildVlessHeader } from '../server/dataplane/vless-header.ts';
import { nodeKillFigure } from './node-kill.ts';
import { geoDownload as downloadThrough, zeroOrigin } from './fixtures/geo-download.ts';
import { serve, type ServeProcess } from '../test/helpers/cli.ts';
import { startPostgres } from '../test/helpers/postgres.ts';
import { CLI, NODE, ROOT, removeDir, tempDir } from '../test/helpers/server.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const PAUSES = Number(process.env.BENCH_PAUSES ?? 20);
const LAGS = Number(process.env.BENCH_LAGS ?? 10);
const GEO_RUNS = Number(process.env.BENCH_GEO_RUNS ?? 5);
const GEO_BYTES = 128 * 1024 * 1024;
const CONNECTIONS = 40;
/** Interleaved rounds of the SQLite-against-PostgreSQL figures. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cli(args: string[]): string {
  const r = spawnSync(NODE, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`vpn-access ${args.slice(0, 2).join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

async function api(base: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  return text ? JSON.parse(text) : undefined;
}

/** Requests per second over all targets at once (autocannon per target, concurrently). */
async function rps(targets: Array<{ url: string; method?: 'GET' | 'POST'; body?: string }>, token: string): Promise<number> {
  const per = Math.max(1, Math.floor(CONNECTIONS / targets.length));
  // Warm-up (JIT, connection pools), not counted.
  await Promise.all(targets.map((t) => autocannon({ url: t.url, method: t.method ?? 'GET', body: t.body, connections: per, duration: 1, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })));
  const results = await Promise.all(
    targets.map((t) =>
      autocannon({ url: t.url, method: t.method ?? 'GET', body: t.body, connections: per, duration: SECONDS, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }),
    ),
  );
  for (const r of results) if (r.non2xx > 0) console.log(`  (warning: ${r.non2xx} non-2xx answers on ${r.url})`);
  return results.reduce((a, r) => a + r.requests.average, 0);
}

const median = (xs: number[]) => pct(xs, 50);

/** ROUNDS rounds, each running every figure once in turn: each figure's values, in round order. */
async function interleaved<K extends string>(figures: Record<K, () => Promise<number>>): Promise<Record<K, number[]>> {
  const out = Object.fromEntries(Object.keys(figures).map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < ROUNDS; round++) for (const k of Object.keys(figures) as K[]) out[k].push(await figures[k]());
  return out;
}

function runNode(token: string, controls: string[], dir: string, host = '127.0.0.2'): Promise<{ child: ChildProcess; tcpPort: number; proxyPort: number }> {
  let out = '';
  const child = spawn(NODE, [CLI, 'node', 'run', '--control', controls.join(','), '--token', token, '--host', host, '--port', '0', '--vless-tcp-port', '0', '--proxy-port', '0', '--relay-port', '0', '--egress', 'allow-all', '--data-dir', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`node run did not start: ${out}`)), 30_000);
    const check = () => {
      const m = /node listening: VLESS ws \S+:\d+, tcp (\d+), proxy (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(t);
      resolve({ child, tcpPort: Number(m[1]), proxyPort: Number(m[2]) });
    };
    child.stdout!.on('data', check);
  });
}

async function main(): Promise<void> {
  const cleanup: Array<() => unknown> = [];
  const dirs: string[] = [];
  const dir = (p: string) => {
    const d = tempDir(p);
    dirs.push(d);
    return d;
  };
  const pg = await startPostgres();
  cleanup.push(() => pg.destroy());
  try {
    const url = await pg.createDatabase('bench');
    const quiet = ['--quiet', '--rate-limit', '100000000/60', '--egress', 'allow-all'];
    const sqlite: ServeProcess = await serve(dir('vad-bench-sqlite-'), quiet);
    const cached = ['--database', url, '--read-cache', 'on', ...quiet];
    const [a, b, c]: ServeProcess[] = await Promise.all([serve(dir('vad-bench-a-'), cached), serve(dir('vad-bench-b-'), cached), serve(dir('vad-bench-c-'), ['--database', url, '--read-cache', 'off', ...quiet])]);
    for (const p of [sqlite, a, b, c]) cleanup.push(() => p.kill('SIGKILL'));
    const sqliteToken = (/^\s+(vad_[A-Za-z0-9_-]+)\s*$/m.exec(sqlite.stdout()) ?? [])[1]!;
    const pgToken = cli(['token', 'create', '--customer', 'bench', '--role', 'owner', '--database', url]);

    console.log(`cluster benchmark: ${CONNECTIONS} connections, ${SECONDS} s per figure; SQLite, one and two \`serve --database\` instances on one PostgreSQL 15, all on this ${'2-core'} machine\n`);
    const sqliteId = (await api(sqlite.baseUrl, sqliteToken, 'POST', '/sessions', { client_id: 'bench', zone: 'de-fra', reusable: true })).id;
    const pgId = (await api(a.baseUrl, pgToken, 'POST', '/sessions', { client_id: 'bench', zone: 'de-fra', reusable: true })).id;
    const create = JSON.stringify({ client_id: 'bench-load', zone: 'de-fra', reusable: true });

    // SQLite against one PostgreSQL instance: ROUNDS interleaved rounds, each measuring both in turn,
    // so that a spell of load from elsewhere on the machine falls on both; the ratio is the median of
    // the rounds' ratios (one round alone gave 0.51 to 1.19 for the same code).
    const reads = await interleaved({
      sqlite: () => rps([{ url: `${sqlite.baseUrl}/sessions/${sqliteId}/status` }], sqliteToken),
      uncached: () => rps([{ url: `${c.baseUrl}/sessions/${pgId}/status` }], pgToken),
      one: () => rps([{ url: `${a.baseUrl}/sessions/${pgId}/status` }], pgToken),
    });
    const readsTwo = await rps([{ url: `${a.baseUrl}/sessions/${pgId}/status` }, { url: `${b.baseUrl}/sessions/${pgId}/status` }], pgToken);
    const creates = await interleaved({
      sqlite: () => rps([{ url: `${sqlite.baseUrl}/sessions`, method: 'POST', body: create }], sqliteToken),
      one: () => rps([{ url: `${a.baseUrl}/sessions`, method: 'POST', body: create }], pgToken),
    });
    const createsTwo = await rps([{ url: `${a.baseUrl}/sessions`, method: 'POST', body: create }, { url: `${b.baseUrl}/sessions`, method: 'POST', body: create }], pgToken);
    const line = (name: string, v: number, rest = '') => console.log(`${name.padEnd(46)} ${fmt(v).padStart(9)} req/s${rest}`);
    const row = (name: string, v: number, base: number, baseName: string) => line(name, v, ` | baseline ${baseName} ${fmt(base)} req/s | ratio ${fmt(v / base, 2)}`);
    const paired = (name: string, v: number[], base: number[]) => {
      const ratios = v.map((x, i) => x / base[i]!);
      line(name, median(v), ` | baseline SQLite ${fmt(median(base))} req/s | ratio ${fmt(median(ratios), 2)} (median of ${ratios.length} interleaved rounds: ${ratios.map((r) => fmt(r, 2)).join(', ')})`);
    };
    line(`authenticated reads, SQLite (baseline, median)`, median(reads.sqlite));
    paired('authenticated reads, PostgreSQL, --read-cache off', reads.uncached, reads.sqlite);
    paired('authenticated reads, PostgreSQL, 1 instance', reads.one, reads.sqlite);
    row('authenticated reads, PostgreSQL, 2 instances', readsTwo, median(reads.one), '1 instance');
    line(`session creation, SQLite (baseline, median)`, median(creates.sqlite));
    paired('session creation, PostgreSQL, 1 instance', creates.one, creates.sqlite);
    row('session creation, PostgreSQL, 2 instances', createsTwo, median(creates.one), '1 instance');

    // A node on 127.0.0.2 connected to A; pauses are made on B.
    const nodeToken = cli(['node', 'add', '--name', 'sao-bench', '--zone', 'br-sao', '--public-host', '127.0.0.2', '--database', url]);
    const nodeDir = dir('vad-bench-node-');
    const node = await runNode(nodeToken, [a.baseUrl.replace(/\/v2$/, '')], nodeDir);
    cleanup.push(() => node.child.kill('SIGKILL'));
    const echo = createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    cleanup.push(() => echo.close());
    const echoPort = (echo.address() as { port: number }).port;
    const open = async (id: string): Promise<{ s: Socket; got: () => number; closed: Promise<number> }> => {
      const s = connect(node.tcpPort, '127.0.0.2');
      s.on('error', () => {});
      let got = 0;
      s.on('data', (d: Buffer) => (got += d.length));
      const closed = new Promise<number>((r) => s.once('close', () => r(performance.now())));
      s.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echoPort, address: '127.0.0.1' }), Buffer.from('hi')]));
      for (let i = 0; i < 300 && got < 4 && !s.destroyed; i++) await sleep(10);
      return { s, got: () => got, closed };
    };
    // The node's zone turns active with its first report.
    for (let i = 0; i < 100; i++) {
      const zones = (await api(b.baseUrl, pgToken, 'GET', '/zones')).zones as Array<{ code: string; has_active_nodes: boolean }>;
      if (zones.find((z) => z.code === 'br-sao')?.has_active_nodes) break;
      await sleep(100);
    }
    const session = await api(b.baseUrl, pgToken, 'POST', '/sessions', { client_id: 'bench-node', zone: 'br-sao', reusable: true });
    if (!session?.id) throw new Error(`creating the node's session failed: ${JSON.stringify(session)}`);
    for (let i = 0; i < 100; i++) {
      const c = await open(session.id);
      const ok = c.got() >= 4;
      c.s.destroy();
      if (ok) break;
      await sleep(100);
    }
    const cuts: number[] = [];
    for (let i = 0; i < PAUSES; i++) {
      const c = await open(session.id);
      if (c.got() < 4) throw new Error('the node did not relay');
      const t0 = performance.now();
      await api(b.baseUrl, pgToken, 'PATCH', `/sessions/${session.id}/pause`);
      const t1 = await Promise.race([c.closed, sleep(10_000).then(() => NaN)]);
      cuts.push(t1 - t0);
      await api(b.baseUrl, pgToken, 'PATCH', `/sessions/${session.id}/resume`);
      await sleep(300);
    }
    console.log(`\npause on instance B → cut on the node (connected to A), ${PAUSES} rounds: p50 ${fmt(pct(cuts, 50))} ms, p99 ${fmt(pct(cuts, 99))} ms | target 1000 ms`);

    const lags: number[] = [];
    const burst = Buffer.alloc(256 * 1024, 7);
    for (let i = 0; i < LAGS; i++) {
      const before = (await api(b.baseUrl, pgToken, 'GET', `/sessions/${session.id}/status`)).uploaded_bytes as number;
      const c = await open(session.id);
      c.s.write(burst);
      const t0 = performance.now();
      for (let j = 0; j < 1000; j++) {
        const now = (await api(b.baseUrl, pgToken, 'GET', `/sessions/${session.id}/status`)).uploaded_bytes as number;
        if (now >= before + burst.length) break;
        await sleep(20);
      }
      lags.push(performance.now() - t0);
      c.s.destroy();
      await sleep(200);
    }
    console.log(`report lag: bytes moved through the node → visible on instance B, ${LAGS} rounds: p50 ${fmt(pct(lags, 50))} ms, p99 ${fmt(pct(lags, 99))} ms | target 2000 ms`);

    // The geo proxy: a second node in Sydney (127.0.0.3, connected to B) is the exit for AU.
    const sydToken = cli(['node', 'add', '--name', 'syd-bench', '--zone', 'au-syd', '--public-host', '127.0.0.3', '--database', url]);
    const syd = await runNode(sydToken, [b.baseUrl.replace(/\/v2$/, '')], dir('vad-bench-syd-'), '127.0.0.3');
    cleanup.push(() => syd.child.kill('SIGKILL'));
    const origin = await zeroOrigin(GEO_BYTES);
    cleanup.push(() => origin.close());
    const originUrl = origin.url;
    /** One download through the São Paulo node's proxy: MiB/s, or NaN when it did not complete. */
    const geoDownload = (target: string) => downloadThrough(`127.0.0.2:${node.proxyPort}`, session.id, target, originUrl, GEO_BYTES);
    for (let i = 0; i < 100 && !Number.isFinite(await geoDownload('-cc-AU').catch(() => NaN)); i++) await sleep(200);
    const relayed: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < GEO_RUNS; i++) {
      direct.push(await geoDownload('-cc-BR'));
      relayed.push(await geoDownload('-cc-AU'));
    }
    console.log(`geo proxy, ${GEO_BYTES >> 20} MiB through the São Paulo node (CONNECT), median of ${GEO_RUNS}: -cc-AU relayed to the Sydney node ${fmt(median(relayed))} MiB/s | baseline -cc-BR leaving from São Paulo ${fmt(median(direct))} MiB/s | ratio ${fmt(median(relayed) / median(direct), 2)}`);

    // Last: it kills the São Paulo node with -9 in the middle of a full-speed download.
    await nodeKillFigure({
      sessionId: session.id,
      tcpPort: node.tcpPort,
      kill9: async () => {
        const gone = new Promise((r) => node.child.once('exit', r));
        node.child.kill('SIGKILL');
        await gone;
      },
      restart: async () => {
        const again = await runNode(nodeToken, [a.baseUrl.replace(/\/v2$/, '')], nodeDir);
        cleanup.push(() => again.child.kill('SIGKILL'));
      },
      counters: async () => {
        const st = await api(b.baseUrl, pgToken, 'GET', `/sessions/${session.id}/status`);
        return { up: st.uploaded_bytes, down: st.downloaded_bytes };
      },
    });
  } finally {
    for (const c of cleanup.reverse()) await Promise.resolve().then(c).catch(() => {});
    for (const d of dirs) removeDir(d);
  }
}

await main();
process.exit(0);
