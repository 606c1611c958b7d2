// Connections benchmark (not a test): `npm run bench -- connections`. One process holding
// BENCH_CONNS (8,000) relayed VLESS-over-TCP connections at once, BENCH_ACTIVE (1,000) of them
// moving data: each of those sends BENCH_CHUNK bytes (4 KiB) every 250 ms to an echo origin and
// reads them back. Every relayed connection is two sockets in the server, so 8,000 is about what
// this machine's descriptor limit (20,000 per process) allows.
// The server is the real `vpn-access serve` (SQLite, a child process); the clients and the echo
// origin are child processes of their own, so the server's figures are its own. Its sessions are
// BENCH_CONNS / 10 reusable sessions of as many clients, 10 connections each (inside the default
// per-session burst and open-connection limits: nothing here is over a limit).
// Figures, each beside its baseline from the same run:
//  - memory per connection: resident memory with the connections open minus before them, over
//    their number, beside Debian's v2ray 4.34 as the VLESS server holding the same connections;
//  - event-loop delay p99 (the server's nodejs_eventloop_lag_seconds{stat="p99"} over the phase) and
//    the API's status read p99 (sequential GET /v2/sessions/{id}/status from this process), with
//    the connections open and moving beside the same figures with none open;
//  - connections opened, refused and cut (0 expected), and the bytes the server counted beside
//    the bytes the clients got back.
// Env: BENCH_CONNS (8000), BENCH_ACTIVE (1000), BENCH_CHUNK (4096), BENCH_PHASE_SECONDS (10).
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { buildVlessHeader } from '../server/dataplane/vless-header.ts';

const CONNS = Number(process.env.BENCH_CONNS ?? 8000);
const ACTIVE = Math.min(CONNS, Number(process.env.BENCH_ACTIVE ?? 1000));
const CHUNK = Number(process.env.BENCH_CHUNK ?? 4096);
const PHASE_SECONDS = Number(process.env.BENCH_PHASE_SECONDS ?? 10);
const PER_SESSION = 10;
const TICK_MS = 250;
const OPEN_WAVE = 200;
const KiB = 1024;

interface Plan { host: string; port: number; target: number; ids: string[] }
interface OpenReport { opened: number; failed: number; ms: number }
interface EndReport { cut: number; echoed: number; sent: number }

const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * KiB;

// ---- children ------------------------------------------------------------------------------

/** The echo origin: every connection gets back what it sends. */
function runOrigin(): void {
  const srv = createServer((s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  srv.listen(0, '127.0.0.1', () => process.send!({ port: (srv.address() as { port: number }).port }));
}

/** The clients: open every connection (a VLESS header and one byte, echoed), report, then on
 *  'go' the first ACTIVE send CHUNK every TICK_MS; on 'stop' report and close. */
function runClients(): void {
  const sockets: Socket[] = [];
  let cut = 0, echoed = 0, sent = 0, stopping = false;
  const open = (plan: Plan, id: string) =>
    new Promise<Socket | null>((resolve) => {
      const s = connect(plan.port, plan.host);
      let got = 0, head = -1, ready = false;
      const timer = setTimeout(() => (s.destroy(), resolve(null)), 20_000);
      s.setNoDelay(true);
      s.on('connect', () => s.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: plan.target, address: '127.0.0.1' }), Buffer.from('x')])));
      s.on('data', (d: Buffer) => {
        got += d.length;
        if (head < 0 && got >= 2) head = 2 + d[1]; // version, addons length, addons
        const payload = head < 0 ? 0 : got - head;
        if (!ready && payload >= 1) {
          ready = true;
          clearTimeout(timer);
          resolve(s);
        } else if (ready) echoed += d.length;
      });
      s.on('error', () => {});
      s.on('close', () => {
        clearTimeout(timer);
        if (!ready) return resolve(null);
        if (!stopping) cut++;
      });
    });
  process.on('message', async (m: { plan?: Plan; go?: true; stop?: true }) => {
    if (m.plan) {
      const t0 = performance.now();
      const wanted = m.plan.ids.flatMap((id) => Array.from({ length: PER_SESSION }, () => id)).slice(0, CONNS);
      let failed = 0;
      for (let i = 0; i < wanted.length; i += OPEN_WAVE) {
        const wave = await Promise.all(wanted.slice(i, i + OPEN_WAVE).map((id) => open(m.plan!, id)));
        for (const s of wave) s ? sockets.push(s) : failed++;
      }
      process.send!({ opened: sockets.length, failed, ms: performance.now() - t0 } satisfies OpenReport);
    } else if (m.go) {
      const chunk = Buffer.alloc(CHUNK, 7);
      // Spread over the tick so the active connections do not all send in the same millisecond.
      sockets.slice(0, ACTIVE).forEach((s, i) => {
        const start = setTimeout(() => {
          const t = setInterval(() => {
            if (s.destroyed || stopping) return clearInterval(t);
            s.write(chunk);
            sent += chunk.length;
          }, TICK_MS);
          s.once('close', () => clearInterval(t));
        }, (i * TICK_MS) / ACTIVE);
        s.once('close', () => clearTimeout(start));
      });
    } else if (m.stop) {
      stopping = true;
      await sleep(500); // what is in flight comes back
      process.send!({ cut, echoed, sent } satisfies EndReport);
      for (const s of sockets) s.destroy();
      setTimeout(() => process.exit(0), 200);
    }
  });
}

// ---- the run -------------------------------------------------------------------------------

function child<T>(mode: string): { proc: ChildProcess; next: () => Promise<T> } {
  const proc = fork(new URL(import.meta.url).pathname, [mode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return { proc, next: () => new Promise<T>((resolve) => proc.once('message', (m) => resolve(m as T))) };
}

/** Sequential authenticated status reads for `seconds` (bounded by count too): p99 in ms, and any non-200. */
async function statusP99(base: string, token: string, ids: string[], seconds: number): Promise<{ p99: number; bad: number }> {
  const ms: number[] = [];
  let bad = 0;
  const end = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < end && i < 200_000; i++) {
    const t0 = performance.now();
    const res = await fetch(`${base}/sessions/${ids[i % ids.length]}/status`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status !== 200) bad++;
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p99: ms[Math.floor(ms.length * 0.99)] ?? NaN, bad };
}

/** The server's event-loop delay p99 since the previous scrape, in ms. */
async function loopP99(origin: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_seconds\{stat="p99"\} (\S+)$/m.exec(text)?.[1]) * 1000;
}

/** Opens every connection against a server, then runs the active phase; returns the clients' reports and the server's RSS. */
async function hold(plan: Plan, pid: number, during: () => Promise<void>) {
  const clients = child<OpenReport | EndReport>('--clients');
  try {
    await sleep(500);
    const before = rssOf(pid);
    clients.proc.send({ plan });
    const opened = (await clients.next()) as OpenReport;
    await sleep(2000);
    const idleRss = rssOf(pid);
    clients.proc.send({ go: true });
    await during();
    const movingRss = rssOf(pid);
    clients.proc.send({ stop: true });
    const end = (await clients.next()) as EndReport;
    return { opened, end, perConn: (idleRss - before) / Math.max(1, opened.opened), perConnMoving: (movingRss - before) / Math.max(1, opened.opened) };
  } finally {
    clients.proc.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  const { serve, printedToken } = await import('../test/helpers/cli.ts');
  const { tempDir, removeDir } = await import('../test/helpers/server.ts');
  const { runV2ray, requireV2ray } = await import('../test/dataplane/helpers/v2ray.ts');
  const { freePort } = await import('../test/dataplane/helpers/targets.ts');
  requireV2ray();
  const origin = child<{ port: number }>('--origin');
  const target = (await origin.next()).port;
  const dir = tempDir('vad-bench-conns-');
  const srv = await serve(dir, ['--vless-tcp-port', '0', '--egress', 'allow-all', '--rate-limit', '10000000/60', '--quiet']);
  try {
    const token = printedToken(srv.stdout())!;
    const tcpPort = Number(/VLESS tcp (\d+)/.exec(srv.stdout())?.[1]);
    const apiOrigin = srv.baseUrl.replace(/\/v2$/, '');
    const ids: string[] = [];
    for (let i = 0; i < Math.ceil(CONNS / PER_SESSION); i++) {
      const res = await fetch(`${srv.baseUrl}/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: `bench-${i}`, zone: 'de-fra', reusable: true }),
      });
      if (res.status !== 201) throw new Error(`creating session ${i}: ${res.status} ${await res.text()}`);
      ids.push(((await res.json()) as { id: string }).id);
    }
    console.log(`connections benchmark: ${CONNS} relayed VLESS-over-TCP connections held by one process, ${ACTIVE} moving data (${CHUNK} B each ${TICK_MS} ms, echoed), ${ids.length} sessions\n`);

    await loopP99(apiOrigin);
    const idleApi = await statusP99(srv.baseUrl, token, ids, PHASE_SECONDS);
    const idleLoop = await loopP99(apiOrigin);
    let loadedApi = { p99: NaN, bad: 0 }, loadedLoop = NaN;
    const ours = await hold({ host: '127.0.0.1', port: tcpPort, target, ids }, srv.child.pid!, async () => {
      await sleep(1000);
      await loopP99(apiOrigin);
      loadedApi = await statusP99(srv.baseUrl, token, ids, PHASE_SECONDS);
      loadedLoop = await loopP99(apiOrigin);
    });
    await sleep(1500); // the last counters are saved (every 500 ms)
    let counted = 0;
    for (const id of ids.slice(0, Math.ceil(ACTIVE / PER_SESSION))) {
      const s = (await (await fetch(`${srv.baseUrl}/sessions/${id}/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as { downloaded_bytes: number };
      counted += s.downloaded_bytes;
    }
    srv.kill('SIGTERM');
    await srv.exited;

    const vport = await freePort();
    const v2 = await runV2ray({
      log: { loglevel: 'warning' },
      inbounds: [{ listen: '127.0.0.1', port: vport, protocol: 'vless', settings: { clients: ids.map((id) => ({ id })), decryption: 'none' }, streamSettings: { network: 'tcp' } }],
      outbounds: [{ protocol: 'freedom' }],
    }, [vport]);
    let theirs: Awaited<ReturnType<typeof hold>>;
    try {
      theirs = await hold({ host: '127.0.0.1', port: vport, target, ids }, v2.proc.pid!, async () => void (await sleep(PHASE_SECONDS * 1000)));
    } finally {
      await v2.close();
    }

    const kib = (b: number) => fmt(b / KiB);
    console.log(`memory per connection (resident, idle): ours ${kib(ours.perConn)} KiB | baseline v2ray 4.34 ${kib(theirs.perConn)} KiB | ratio ${fmt(ours.perConn / theirs.perConn, 2)} | target <= 16 KiB`);
    console.log(`memory per connection (resident, ${ACTIVE} moving): ours ${kib(ours.perConnMoving)} KiB | baseline v2ray 4.34 ${kib(theirs.perConnMoving)} KiB | ratio ${fmt(ours.perConnMoving / theirs.perConnMoving, 2)}`);
    console.log(`event-loop delay p99: with the connections ${fmt(loadedLoop)} ms | baseline none open ${fmt(idleLoop)} ms | target < 50 ms`);
    console.log(`API status read p99: with the connections ${fmt(loadedApi.p99)} ms | baseline none open ${fmt(idleApi.p99)} ms | target < 20 ms | answers other than 200: ${loadedApi.bad + idleApi.bad}`);
    console.log(`connections: ours opened ${ours.opened.opened} of ${CONNS} in ${fmt(ours.opened.ms / 1000)} s, refused ${ours.opened.failed}, cut ${ours.end.cut} | v2ray opened ${theirs.opened.opened} in ${fmt(theirs.opened.ms / 1000)} s, refused ${theirs.opened.failed}, cut ${theirs.end.cut}`);
    // The counters hold the echoed chunks plus the one-byte opening echo per connection.
    const expected = ours.end.echoed + Math.min(ACTIVE, ours.opened.opened);
    console.log(`bytes: the server counted ${counted} downloaded on the moving sessions | the clients got back ${expected} | difference ${counted - expected}`);
  } finally {
    srv.kill('SIGKILL');
    origin.proc.kill('SIGKILL');
    removeDir(dir);
  }
}

if (process.argv[2] === '--origin') runOrigin();
else if (process.argv[2] === '--clients') runClients();
else await main();
