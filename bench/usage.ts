// Usage-history and webhooks benchmark (not a test): `node bench/usage.ts`, also run by
// `npm run bench`. The relay's throughput with the usage history and webhooks ON beside OFF, in
// the same run: two whole servers (startServer on SQLite, each in its own child process so CPU is
// measured per server), identical but for `usageHistory: false, webhooks: false` on one (the ON
// one has a webhook endpoint taking every session event, answered by a local receiver), each with
// a session made through the API and
// a Debian v2ray 4.34 client (SOCKS inbound, VLESS outbound) in front, downloading the same file
// from a local HTTP target. Transfers alternate between the two servers, the order flipping every
// round, so load from elsewhere on the (noisy, 2-core) box falls on both alike; best and median
// are compared. Target: ON within 5 % of OFF. Afterwards the ON server's history is read
// back through GET /v2/usage and compared with the session counters (it must hold every byte).
// Env: BENCH_FILE_MIB (256), BENCH_TRANSFERS per row (8), BENCH_NETWORKS (ws,tcp).
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MiB = 1024 * 1024;
const FILE_MIB = Number(process.env.BENCH_FILE_MIB ?? 256);
const TRANSFERS = Math.max(1, Number(process.env.BENCH_TRANSFERS ?? 8));
const NETWORKS = (process.env.BENCH_NETWORKS ?? 'ws,tcp').split(',').filter((n): n is 'ws' | 'tcp' => n === 'ws' || n === 'tcp');
const CLK_TCK = 100;
const fmt = (n: number, d = 1) => n.toFixed(d);

async function child(args: string[], env: Record<string, string> = {}): Promise<{ proc: ChildProcess; info: any }> {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const rl = createInterface({ input: proc.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${args.join(' ')} did not start`)), 20_000);
    rl.once('line', (l) => {
      clearTimeout(t);
      resolve(l);
    });
  });
  return { proc, info: JSON.parse(line) };
}

async function kill(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const done = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await done;
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

function curlTo(args: string[], maxTime = 120): Promise<{ code: number; bytes: number; total: number }> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '-o', '/dev/null', '--max-time', String(maxTime), '-w', '%{size_download} %{time_total}', ...args], (err, stdout) => {
      const [b, t] = stdout.trim().split(' ').map(Number);
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, bytes: b || 0, total: t || 0 });
    });
  });
}

interface Row {
  name: string;
  socksPort: number;
  pid: number;
  rates: number[];
  cpu: number;
  bytes: number;
}

const best = (r: Row) => Math.max(...r.rates);
const median = (r: Row) => {
  const s = [...r.rates].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const cpuPerGB = (r: Row) => r.cpu / (r.bytes / 1e9);

async function main(): Promise<void> {
  const { startV2rayClient, requireV2ray } = await import('../test/dataplane/helpers/v2ray.ts');
  requireV2ray();
  const self = new URL(import.meta.url).pathname;
  const dataplaneBench = new URL('./dataplane.ts', import.meta.url).pathname;
  const cleanup: (() => Promise<void>)[] = [];
  try {
    console.log(`usage-history and webhooks benchmark: relay throughput with history and webhooks ON beside OFF, ${FILE_MIB} MiB transfers, ${TRANSFERS} per row, round-robin, Debian v2ray 4.34 client, loopback\n`);
    const target = await child([dataplaneBench, '--target'], { BENCH_FILE_MIB: String(FILE_MIB) });
    cleanup.push(() => kill(target.proc));
    const servers = { on: await child([self, '--server', 'on']), off: await child([self, '--server', 'off']) };
    cleanup.push(() => kill(servers.on.proc), () => kill(servers.off.proc));
    const rows: Row[] = [];
    for (const network of NETWORKS) {
      for (const mode of ['on', 'off'] as const) {
        const s = servers[mode].info;
        const c = await startV2rayClient({ address: '127.0.0.1', port: network === 'ws' ? s.apiPort : s.tcpPort, id: s.id, network, path: '/vless', security: 'none' });
        cleanup.push(() => c.close());
        rows.push({ name: `${network} history ${mode}`, socksPort: c.socksPort, pid: servers[mode].proc.pid!, rates: [], cpu: 0, bytes: 0 });
      }
    }
    const url = (p: string) => `http://127.0.0.1:${target.info.port}/${p}`;
    for (const row of rows) await curlTo(['--socks5-hostname', `127.0.0.1:${row.socksPort}`, url('small')]); // warm-up
    for (let i = 0; i < TRANSFERS; i++) {
      for (const row of i % 2 ? [...rows].reverse() : rows) {
        const cpu0 = cpuSeconds(row.pid);
        const r = await curlTo(['--socks5-hostname', `127.0.0.1:${row.socksPort}`, url('big')]);
        if (r.code !== 0 || r.bytes !== FILE_MIB * MiB) throw new Error(`${row.name}: transfer failed (curl ${r.code}, ${r.bytes} bytes)`);
        row.cpu += cpuSeconds(row.pid) - cpu0;
        row.bytes += r.bytes;
        row.rates.push(r.bytes / MiB / r.total);
      }
    }
    console.log('throughput (MiB/s, best and median transfer) and server CPU-seconds per GB (all transfers)');
    console.log('  ' + 'row'.padEnd(24) + 'best'.padStart(9) + 'median'.padStart(9) + 'CPU s/GB'.padStart(11));
    for (const r of rows) console.log('  ' + r.name.padEnd(24) + fmt(best(r)).padStart(9) + fmt(median(r)).padStart(9) + fmt(cpuPerGB(r), 2).padStart(11));
    console.log('\nratios (history and webhooks on / off; target: throughput at least 0.95x)');
    for (const network of NETWORKS) {
      const on = rows.find((r) => r.name === `${network} history on`)!;
      const off = rows.find((r) => r.name === `${network} history off`)!;
      const ratio = median(on) / median(off);
      console.log(
        `  ${network}: throughput best ${fmt(best(on))} / ${fmt(best(off))} = ${fmt(best(on) / best(off), 3)}x, median ${fmt(median(on))} / ${fmt(median(off))} = ${fmt(ratio, 3)}x` +
          ` (${ratio >= 0.95 ? 'within' : 'OUTSIDE'} 5 %); CPU/GB ${fmt(cpuPerGB(on), 2)} / ${fmt(cpuPerGB(off), 2)} = ${fmt(cpuPerGB(on) / cpuPerGB(off), 3)}x`,
      );
    }
    // The ON server's history holds every byte its session counted.
    const s = servers.on.info;
    await new Promise((r) => setTimeout(r, 3_000)); // the last counter save (500 ms) and history flush (2 s)
    const auth = { Authorization: `Bearer ${s.token}` };
    const status = (await (await fetch(`http://127.0.0.1:${s.apiPort}/v2/sessions/${s.id}/status`, { headers: auth })).json()) as { uploaded_bytes: number; downloaded_bytes: number };
    const usage = (await (await fetch(`http://127.0.0.1:${s.apiPort}/v2/usage?session_id=${s.id}`, { headers: auth })).json()) as { totals: { uploaded_bytes: number; downloaded_bytes: number } };
    const same = usage.totals.downloaded_bytes === status.downloaded_bytes && usage.totals.uploaded_bytes === status.uploaded_bytes;
    console.log(
      `\nhistory ON recorded ${usage.totals.downloaded_bytes} B down / ${usage.totals.uploaded_bytes} B up; session counters ${status.downloaded_bytes} / ${status.uploaded_bytes} (${same ? 'equal' : 'DIFFERENT'})`,
    );
  } finally {
    for (const c of cleanup.reverse()) await c();
  }
}

if (process.argv[2] === '--server') {
  // One whole server (SQLite store, API, data plane), with or without the usage history.
  const { startServer } = await import('../server/serve.ts');
  const dir = mkdtempSync(join(tmpdir(), 'vad-bench-usage-'));
  const on = process.argv[3] === 'on';
  // ON: a webhook endpoint taking every session event, answered 200 by a receiver in this process.
  let received = 0;
  const { createServer } = await import('node:http');
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const srv = await startServer({ dataDir: dir, port: 0, proxyPort: null, egress: 'allow-all', usageHistory: on, ...(on ? {} : { webhooks: false as const }) });
  const token = srv.ownerToken!;
  if (on) {
    const hook = await fetch(`${srv.baseUrl}/webhooks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, events: ['session_start', 'session_stats', 'session_heartbeat', 'session_end'] }),
    });
    if (hook.status !== 201) throw new Error(`registering the bench webhook failed: ${hook.status}`);
  }
  process.on('exit', () => {
    if (on) process.stderr.write(`webhooks ON: ${received} deliveries received\n`);
  });
  const res = await fetch(`${srv.baseUrl}/sessions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ client_id: 'bench', zone: 'de-fra', reusable: true }),
  });
  const session = (await res.json()) as { id: string };
  const stop = async () => {
    await srv.close();
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  console.log(JSON.stringify({ apiPort: srv.apiPort, tcpPort: srv.vlessTcpPort, id: session.id, token }));
} else {
  await main();
}
