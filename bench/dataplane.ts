// Data-plane benchmark (not a test): `node bench/dataplane.ts`.
// The same Debian v2ray 4.34 client (SOCKS inbound, VLESS outbound) and the same local HTTP
// target for every server:
//   - our data plane (run in a child process, like v2ray, so CPU is measured the same way),
//   - Debian v2ray as the VLESS server with per-user stats on and off,
//   over ws and tcp, and a direct curl -> target transfer as the ceiling.
// Server CPU = utime + stime from /proc/<pid>/stat, read before and after each transfer.
// All servers of a transport run at once (idle ones cost nothing) and their transfers are taken
// round-robin, alternating the order every round, so that load from elsewhere on the (noisy,
// 2-core) box falls on every row alike; each row reports its best and median transfer, and the
// ratios compare best with best and median with median.
// Then the speed-cap accuracy (10 s) and the byte-cap overshoot of our server.
// Env: BENCH_FILE_MIB (256), BENCH_TRANSFERS per row (8), BENCH_NETWORKS (ws,tcp),
// BENCH_LIMITS=0 to skip the cap checks.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';

const MiB = 1024 * 1024;
const FILE_MIB = Number(process.env.BENCH_FILE_MIB ?? 256);
const TRANSFERS = Math.max(1, Number(process.env.BENCH_TRANSFERS ?? 8));
/** Which transports to compare (BENCH_NETWORKS=tcp while iterating on the raw-TCP path). */
const NETWORKS = (process.env.BENCH_NETWORKS ?? 'ws,tcp').split(',').filter((n): n is 'ws' | 'tcp' => n === 'ws' || n === 'tcp');
/** BENCH_LIMITS=0 skips the speed-cap and byte-cap checks. */
const LIMITS = process.env.BENCH_LIMITS !== '0';
const CLK_TCK = 100;

// ---- helpers -----------------------------------------------------------------------------
async function child(cmd: string, args: string[]): Promise<{ proc: ChildProcess; info: any }> {
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const rl = createInterface({ input: proc.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${args.join(' ')} did not start`)), 15000);
    rl.once('line', (l) => { clearTimeout(t); resolve(l); });
  });
  return { proc, info: JSON.parse(line) };
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime
}

interface CurlOut { code: number; bytes: number; total: number; start: number }
function curlTo(args: string[], maxTime = 60): Promise<CurlOut> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '-o', '/dev/null', '--max-time', String(maxTime), '-w', '%{size_download} %{time_total} %{time_starttransfer}', ...args], (err, stdout) => {
      const [b, t, s] = stdout.trim().split(' ').map(Number);
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, bytes: b || 0, total: t || 0, start: s || 0 });
    });
  });
}

async function kill(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const done = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await done;
}

interface Row {
  name: string;
  /** null: no proxy (direct). */
  socksPort: number | null;
  /** null: no server process to measure. */
  serverPid: number | null;
  rates: number[];
  cpu: number;
  bytes: number;
}

async function transfer(row: Row, targetPort: number): Promise<void> {
  const proxy = row.socksPort ? ['--socks5-hostname', `127.0.0.1:${row.socksPort}`] : [];
  const cpu0 = row.serverPid ? cpuSeconds(row.serverPid) : 0;
  const r = await curlTo([...proxy, `http://127.0.0.1:${targetPort}/big`]);
  if (r.code !== 0 || r.bytes !== FILE_MIB * MiB) throw new Error(`${row.name}: transfer failed (curl ${r.code}, ${r.bytes} bytes)`);
  if (row.serverPid) row.cpu += cpuSeconds(row.serverPid) - cpu0;
  row.bytes += r.bytes;
  row.rates.push(r.bytes / MiB / r.total);
}

const best = (r: Row) => Math.max(...r.rates);
const median = (r: Row) => {
  const s = [...r.rates].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const cpuPerGB = (r: Row) => (r.serverPid ? r.cpu / (r.bytes / 1e9) : null);

function v2rayServerConfig(port: number, id: string, network: 'ws' | 'tcp', stats: boolean): object {
  return {
    log: { loglevel: 'warning' },
    ...(stats ? { stats: {}, policy: { levels: { '0': { statsUserUplink: true, statsUserDownlink: true } } } } : {}),
    inbounds: [{
      listen: '127.0.0.1', port, protocol: 'vless',
      settings: { clients: [{ id, email: 'bench@local', level: 0 }], decryption: 'none' },
      streamSettings: network === 'ws' ? { network: 'ws', wsSettings: { path: '/vless' } } : { network: 'tcp' },
    }],
    outbounds: [{ protocol: 'freedom' }],
  };
}

const fmt = (n: number, d = 1) => n.toFixed(d);

// ---- main --------------------------------------------------------------------------------
async function main(): Promise<void> {
  const { runV2ray, startV2rayClient, requireV2ray } = await import('../test/dataplane/helpers/v2ray.ts');
  const { freePort } = await import('../test/dataplane/helpers/targets.ts');
  requireV2ray();
  const self = new URL(import.meta.url).pathname;
  const node = process.execPath;
  const t0 = performance.now();
  const target = await child(node, [self, '--target']);
  const targetPort: number = target.info.port;
  const cleanup: (() => Promise<void>)[] = [async () => kill(target.proc)];
  try {
    console.log(`data-plane benchmark: ${FILE_MIB} MiB transfers, ${TRANSFERS} per row taken round-robin, Debian v2ray 4.34 client, loopback\n`);
    const direct: Row = { name: 'direct (curl -> target, ceiling)', socksPort: null, serverPid: null, rates: [], cpu: 0, bytes: 0 };
    const rows: Row[] = [direct];
    const ours = await child(node, [self, '--ours']);
    cleanup.push(async () => kill(ours.proc));
    for (const network of NETWORKS) {
      const port = network === 'ws' ? ours.info.wsPort : ours.info.tcpPort;
      const c = await startV2rayClient({ address: '127.0.0.1', port, id: ours.info.id, network, path: '/vless', security: 'none' });
      cleanup.push(() => c.close());
      rows.push({ name: `ours ${network}`, socksPort: c.socksPort, serverPid: ours.proc.pid!, rates: [], cpu: 0, bytes: 0 });
      for (const stats of [true, false]) {
        const id = randomUUID();
        const vport = await freePort();
        const srv = await runV2ray(v2rayServerConfig(vport, id, network, stats), [vport]);
        cleanup.push(() => srv.close());
        const vc = await startV2rayClient({ address: '127.0.0.1', port: vport, id, network, path: '/vless', security: 'none' });
        cleanup.push(() => vc.close());
        rows.push({ name: `v2ray ${network} stats ${stats ? 'on' : 'off'}`, socksPort: vc.socksPort, serverPid: srv.proc.pid!, rates: [], cpu: 0, bytes: 0 });
      }
    }
    for (const row of rows) {
      const proxy = row.socksPort ? ['--socks5-hostname', `127.0.0.1:${row.socksPort}`] : [];
      await curlTo([...proxy, `http://127.0.0.1:${targetPort}/small`]); // warm-up
    }
    for (let i = 0; i < TRANSFERS; i++) {
      for (const row of i % 2 ? [...rows].reverse() : rows) await transfer(row, targetPort);
    }

    const by = (n: string) => rows.find((f) => f.name === n)!;
    console.log('throughput (MiB/s, best and median transfer) and server CPU-seconds per GB (all transfers)');
    console.log('  ' + 'row'.padEnd(34) + 'best'.padStart(9) + 'median'.padStart(9) + 'CPU s/GB'.padStart(11));
    for (const f of rows) {
      const cpu = cpuPerGB(f);
      console.log('  ' + f.name.padEnd(34) + fmt(best(f)).padStart(9) + fmt(median(f)).padStart(9) + (cpu === null ? '-' : fmt(cpu, 2)).padStart(11));
    }
    console.log('\nratios (ours / baseline; throughput higher is better, CPU lower is better)');
    for (const network of NETWORKS) {
      const o = by(`ours ${network}`);
      for (const stats of ['on', 'off']) {
        const b = by(`v2ray ${network} stats ${stats}`);
        console.log(`  ${network} vs v2ray stats ${stats}: throughput best ${fmt(best(o))} / ${fmt(best(b))} = ${fmt(best(o) / best(b), 2)}x, ` +
          `median ${fmt(median(o))} / ${fmt(median(b))} = ${fmt(median(o) / median(b), 2)}x; ` +
          `CPU/GB ${fmt(cpuPerGB(o)!, 2)} / ${fmt(cpuPerGB(b)!, 2)} = ${fmt(cpuPerGB(o)! / cpuPerGB(b)!, 2)}x`);
      }
      console.log(`  ${network} vs direct ceiling: best ${fmt(best(o))} / ${fmt(best(direct))} = ${fmt(best(o) / best(direct), 2)}x`);
    }
    for (const c of cleanup.splice(1).reverse()) await c();

    if (!LIMITS) return;
    // speed cap accuracy: 10 s under a session download cap
    const cap = 4 * 1000 * 1000;
    const shaped = await child(node, [self, '--ours', JSON.stringify({ session: { download_speed: cap } })]);
    cleanup.push(async () => kill(shaped.proc));
    for (const network of ['ws', 'tcp'] as const) {
      const port = network === 'ws' ? shaped.info.wsPort : shaped.info.tcpPort;
      const c = await startV2rayClient({ address: '127.0.0.1', port, id: shaped.info.id, network, path: '/vless', security: 'none' });
      try {
        const r = await curlTo(['--socks5-hostname', `127.0.0.1:${c.socksPort}`, `http://127.0.0.1:${targetPort}/big`], 10);
        const rate = r.bytes / (r.total - r.start);
        console.log(`\nspeed cap (${network}): measured ${fmt(rate / 1e6, 3)} MB/s over ${fmt(r.total - r.start, 1)} s vs cap ${fmt(cap / 1e6, 3)} MB/s = ${fmt(rate / cap, 3)}x (error ${fmt((100 * Math.abs(rate - cap)) / cap, 2)}%)`);
      } finally {
        await c.close();
      }
    }
    await kill(shaped.proc);

    // byte cap overshoot
    for (const network of ['ws', 'tcp'] as const) {
      const byteCap = 20 * MiB + 12345;
      const capped = await child(node, [self, '--ours', JSON.stringify({ session: { downloaded_bytes: byteCap } })]);
      const port = network === 'ws' ? capped.info.wsPort : capped.info.tcpPort;
      const c = await startV2rayClient({ address: '127.0.0.1', port, id: capped.info.id, network, path: '/vless', security: 'none' });
      try {
        const r = await curlTo(['--socks5-hostname', `127.0.0.1:${c.socksPort}`, `http://127.0.0.1:${targetPort}/big`], 20);
        await new Promise((res) => setTimeout(res, 300));
        const row = await (await fetch(`http://127.0.0.1:${capped.info.wsPort}/`)).json() as { downloaded_bytes: number; status: string };
        console.log(`byte cap (${network}): cap ${byteCap} B, counted ${row.downloaded_bytes} B, overshoot ${row.downloaded_bytes - byteCap} B (limit < 65536), ` +
          `client received ${r.bytes} B of body, session ${row.status}`);
      } finally {
        await c.close();
        await kill(capped.proc);
      }
    }
    console.log(`\ntotal bench time ${fmt((performance.now() - t0) / 1000)} s`);
  } finally {
    for (const c of cleanup.reverse()) await c();
  }
}

// ---- child modes -------------------------------------------------------------------------
if (process.argv[2] === '--target') {
  const body = Buffer.alloc(FILE_MIB * MiB, 7);
  const small = Buffer.alloc(64 * 1024, 1);
  const srv = createServer((req, res) => {
    const b = req.url?.startsWith('/big') ? body : small;
    res.setHeader('Content-Length', b.length);
    res.end(b);
  });
  srv.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (srv.address() as { port: number }).port })));
} else if (process.argv[2] === '--ours') {
  const limits = JSON.parse(process.argv[3] ?? '{}');
  const { startHarness } = await import('../test/dataplane/helpers/harness.ts');
  const h = await startHarness({ statsIntervalMs: 5000, heartbeatIntervalMs: 30000 });
  if (limits.session) h.mem.setLimits('bench', 'session', limits.session);
  const id = h.mem.createSession({ customer: 'bench', reusable: true });
  h.http.removeAllListeners('request');
  h.http.on('request', (_req, res) => res.end(JSON.stringify(h.mem.sessions.get(id))));
  console.log(JSON.stringify({ wsPort: h.wsPort, tcpPort: h.vlessTcpPort, id }));
} else {
  await main();
}
