// Geo relay benchmark (not a test): `node bench/geo.ts`, also `npm run bench -- geo`.
// The geo proxy relayed node to node, the same figure bench/cluster.ts prints, without PostgreSQL
// and the API figures around it: one `serve` (SQLite) and two `node run` processes, São Paulo
// (127.0.0.2, the entry) and Sydney (127.0.0.3, the exit for AU). A 128 MiB CONNECT download
// through the São Paulo node's proxy with `-cc-AU` (relayed over TLS to Sydney, which dials the
// origin) beside the same download leaving from São Paulo itself (`-cc-BR`), median of
// BENCH_GEO_RUNS (7), alternating. BENCH_CPU_PROF=<dir>: both nodes run with `--cpu-prof` into
// <dir> (the profiles are written when they stop at the end; a profile covers the whole run);
// BENCH_GEO_ONLY=relayed (or direct) makes only those downloads (a profile of one path alone).
// Beside the speeds: the CPU time each node spent per GiB (Linux /proc, median over the runs), the
// figure a busy shared machine disturbs least; then the TLS floor (fixtures/geo-download.ts
// tlsFloor: node's own TLS between two processes, set up as the relay's) and what the relay spends
// beyond it: relayed São Paulo + Sydney, less the direct exit's São Paulo, less the floor's two sides.
// Last, short requests (a 2 KiB GET on a new connection each, 20 clients over 80 sessions) relayed
// beside leaving from São Paulo, median of SHORT_RUNS runs: requests/s, latency, CPU a request.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { cpuOf, geoDownload, shortRequests, smallOrigin, tlsFloor, zeroOrigin } from './fixtures/geo-download.ts';
import { serve, type ServeProcess } from '../test/helpers/cli.ts';
import { CLI, NODE, ROOT, removeDir, tempDir } from '../test/helpers/server.ts';

const GEO_RUNS = Number(process.env.BENCH_GEO_RUNS ?? 7);
/** Runs of short requests (each SHORT_SECONDS long), alternating leaving from the entry and relayed. */
const SHORT_RUNS = 3;
const SHORT_SECONDS = 5;
const GEO_BYTES = 128 * 1024 * 1024;
const PROF = process.env.BENCH_CPU_PROF;
const ONLY = process.env.BENCH_GEO_ONLY;
const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** CPU seconds the whole machine has been busy (all cores; Linux /proc/stat, not idle or iowait). */
function machineCpu(): number {
  try {
    const [, ...f] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
    return (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) / 100;
  } catch {
    return NaN;
  }
}

async function api(base: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  return text ? JSON.parse(text) : undefined;
}

/** `vpn-access node run` on `host`, connected to `control`; resolves with its proxy port once it listens. */
function runNode(token: string, control: string, dir: string, host: string, name: string): Promise<{ child: ChildProcess; proxyPort: number }> {
  let out = '';
  const prof = PROF ? ['--cpu-prof', '--cpu-prof-dir', PROF, '--cpu-prof-name', `${name}.cpuprofile`] : [];
  const child = spawn(NODE, [...prof, CLI, 'node', 'run', '--control', control, '--token', token, '--host', host, '--port', '0', '--vless-tcp-port', '0', '--proxy-port', '0', '--relay-port', '0', '--egress', 'allow-all', '--data-dir', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`node run did not start: ${out}`)), 30_000);
    child.stdout!.on('data', () => {
      const m = /node listening: VLESS ws \S+:\d+, tcp \d+, proxy (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(t);
      resolve({ child, proxyPort: Number(m[1]) });
    });
  });
}

/** Stops a node with SIGTERM (so a --cpu-prof profile is written), SIGKILL after 10 s. */
async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(t);
}

type Node = { child: ChildProcess; proxyPort: number };
type Short = Awaited<ReturnType<typeof shortRequests>> & { sao: number; syd: number };

/**
 * Short requests: a small GET per connection from 20 clients over 80 sessions (each session's
 * connection rate stays under its limit), where a TLS handshake per relayed request is the cost;
 * each run with the CPU a request of both nodes.
 */
async function shortRequestFigure(base: string, token: string, sao: Node, syd: Node, cleanup: Array<() => unknown>): Promise<void> {
  const small = await smallOrigin();
  cleanup.push(() => small.close());
  const many: string[] = [];
  for (let i = 0; i < 80; i++) many.push((await api(base, token, 'POST', '/sessions', { client_id: `bench-geo-${i}`, zone: 'br-sao', reusable: true })).id);
  const proxy = { host: '127.0.0.2', port: sao.proxyPort };
  // The last session made has reached the node.
  for (let i = 0; i < 100 && (await shortRequests(proxy, many.slice(-1), '-cc-AU', small.port, 0.1, 1)).rps === 0; i++) await sleep(200);
  const runs = { direct: [] as Short[], relayed: [] as Short[] };
  const run = async (target: string, into: Short[]) => {
    const before = [cpuOf(sao.child.pid), cpuOf(syd.child.pid)];
    const r = await shortRequests(proxy, many, target, small.port, SHORT_SECONDS);
    const n = r.rps * SHORT_SECONDS;
    into.push({ ...r, sao: ((cpuOf(sao.child.pid) - before[0]) * 1e6) / n, syd: ((cpuOf(syd.child.pid) - before[1]) * 1e6) / n });
  };
  for (let i = 0; i < SHORT_RUNS; i++) {
    if (ONLY !== 'relayed') await run('-cc-BR', runs.direct);
    if (ONLY !== 'direct') await run('-cc-AU', runs.relayed);
  }
  const mid = (xs: Short[]) => xs.sort((a, b) => a.rps - b.rps)[Math.floor(xs.length / 2)];
  const [r, d] = [mid(runs.relayed), mid(runs.direct)];
  const said = (x: Short | undefined) => (x ? `${fmt(x.rps, 0)} req/s (p50 ${fmt(x.p50)} ms, p99 ${fmt(x.p99)} ms, failed ${x.failed}; CPU a request São Paulo ${fmt(x.sao, 0)} µs, Sydney ${fmt(x.syd, 0)} µs)` : 'n/a');
  console.log(`short requests through the São Paulo node (a 2 KiB GET per connection, 20 clients), median of ${SHORT_RUNS} runs of ${SHORT_SECONDS} s: -cc-AU relayed ${said(r)} | baseline -cc-BR leaving from São Paulo ${said(d)} | ratio ${fmt((r?.rps ?? NaN) / (d?.rps ?? NaN), 2)}`);
}

async function main(): Promise<void> {
  const dirs: string[] = [];
  const dir = (p: string) => {
    const d = tempDir(p);
    dirs.push(d);
    return d;
  };
  const cleanup: Array<() => unknown> = [];
  try {
    const dataDir = dir('vad-bench-geo-cp-');
    const cp: ServeProcess = await serve(dataDir, ['--quiet', '--rate-limit', '100000000/60', '--egress', 'allow-all']);
    cleanup.push(() => cp.kill('SIGKILL'));
    const token = (/^\s+(vad_[A-Za-z0-9_-]+)\s*$/m.exec(cp.stdout()) ?? [])[1]!;
    const control = cp.baseUrl.replace(/\/v2$/, '');
    const add = (name: string, zone: string, host: string) => {
      const r = spawnSync(NODE, [CLI, 'node', 'add', '--name', name, '--zone', zone, '--public-host', host, '--data-dir', dataDir], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
      if (r.status !== 0) throw new Error(`node add ${name}: ${r.stderr}`);
      return r.stdout.trim();
    };
    const sao = await runNode(add('sao-bench', 'br-sao', '127.0.0.2'), control, dir('vad-bench-geo-sao-'), '127.0.0.2', 'sao');
    cleanup.push(() => stopNode(sao.child));
    const syd = await runNode(add('syd-bench', 'au-syd', '127.0.0.3'), control, dir('vad-bench-geo-syd-'), '127.0.0.3', 'syd');
    cleanup.push(() => stopNode(syd.child));
    for (let i = 0; i < 100; i++) {
      const zones = (await api(cp.baseUrl, token, 'GET', '/zones')).zones as Array<{ code: string; has_active_nodes: boolean }>;
      if (zones.find((z) => z.code === 'br-sao')?.has_active_nodes && zones.find((z) => z.code === 'au-syd')?.has_active_nodes) break;
      await sleep(100);
    }
    const session = await api(cp.baseUrl, token, 'POST', '/sessions', { client_id: 'bench-geo', zone: 'br-sao', reusable: true });
    if (!session?.id) throw new Error(`creating the session failed: ${JSON.stringify(session)}`);

    const origin = await zeroOrigin(GEO_BYTES);
    cleanup.push(() => origin.close());
    const originUrl = origin.url;
    /** One download through the São Paulo node's proxy: MiB/s, or NaN when it did not complete. */
    const download = (target: string) => geoDownload(`127.0.0.2:${sao.proxyPort}`, session.id, target, originUrl, GEO_BYTES);
    // The session and the routes reach the nodes with their next state.
    for (let i = 0; i < 100 && !Number.isFinite(await download('-cc-AU')); i++) await sleep(200);
    const relayed: number[] = [];
    const direct: number[] = [];
    const cpu = { relayedSao: [] as number[], relayedSyd: [] as number[], directSao: [] as number[], relayedAll: [] as number[], directAll: [] as number[] };
    /** One download, with the CPU seconds per GiB each node, and the whole machine, spent on it. */
    const measured = async (target: string, speeds: number[], sao$: number[], all$: number[], syd$?: number[]) => {
      const before = [cpuOf(sao.child.pid), cpuOf(syd.child.pid), machineCpu()];
      speeds.push(await download(target));
      const gib = GEO_BYTES / 2 ** 30;
      sao$.push((cpuOf(sao.child.pid) - before[0]) / gib);
      syd$?.push((cpuOf(syd.child.pid) - before[1]) / gib);
      all$.push((machineCpu() - before[2]) / gib);
    };
    console.log(`  measuring: São Paulo node pid ${sao.child.pid}, Sydney node pid ${syd.child.pid}`);
    const window = [process.hrtime.bigint() / 1000n];
    for (let i = 0; i < GEO_RUNS; i++) {
      if (ONLY !== 'relayed') await measured('-cc-BR', direct, cpu.directSao, cpu.directAll);
      if (ONLY !== 'direct') await measured('-cc-AU', relayed, cpu.relayedSao, cpu.relayedAll, cpu.relayedSyd);
    }
    window.push(process.hrtime.bigint() / 1000n);
    if (PROF) console.log(`  profiled window (µs, monotonic): ${window.join(' ')}`);
    console.log(`  runs, MiB/s: relayed ${relayed.map((x) => fmt(x, 0)).join(' ')} | direct ${direct.map((x) => fmt(x, 0)).join(' ')}`);
    const r = median(relayed);
    const d = median(direct);
    console.log(`  CPU s per GiB, median: relayed São Paulo ${fmt(median(cpu.relayedSao), 2)} + Sydney ${fmt(median(cpu.relayedSyd), 2)}, whole machine ${fmt(median(cpu.relayedAll), 2)} | direct São Paulo ${fmt(median(cpu.directSao), 2)}, whole machine ${fmt(median(cpu.directAll), 2)}`);
    console.log(`geo proxy, ${GEO_BYTES >> 20} MiB through the São Paulo node (CONNECT), median of ${GEO_RUNS}: -cc-AU relayed to the Sydney node ${fmt(r)} MiB/s | baseline -cc-BR leaving from São Paulo ${fmt(d)} MiB/s | ratio ${fmt(r / d, 2)}`);
    const floor = await tlsFloor(dir('vad-bench-geo-tls-'), GEO_BYTES, GEO_RUNS);
    const beyond = median(cpu.relayedSao) + median(cpu.relayedSyd) - median(cpu.directSao) - floor.sender - floor.receiver;
    console.log(`TLS floor, ${GEO_BYTES >> 20} MiB over one TLS connection between two processes, median of ${GEO_RUNS}: ${fmt(floor.speed)} MiB/s; CPU s per GiB sender ${fmt(floor.sender, 2)} + receiver ${fmt(floor.receiver, 2)} | relay CPU beyond the floor ${fmt(beyond, 2)} s per GiB`);
    // A relay costing nothing beyond the floor would need the whole machine's relayed CPU less `beyond` per GiB.
    const cores = availableParallelism();
    const best = (cores / (median(cpu.relayedAll) - beyond)) * 1024;
    console.log(`  a relay with no cost beyond the floor, on ${cores} cores as busy as the relayed runs: at most ${fmt(best, 0)} MiB/s, ratio ${fmt(best / d, 2)}`);

    await shortRequestFigure(cp.baseUrl, token, sao, syd, cleanup);
  } finally {
    for (const c of cleanup.reverse()) await Promise.resolve().then(c).catch(() => {});
    for (const d of dirs) removeDir(d);
  }
}

await main();
process.exit(0);
