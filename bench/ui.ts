// UI measurements (web mode, Debian Chromium), each printed beside what it is compared to:
//  1. process start -> server listening, and -> first contentful paint / app ready
//     (compared to a bare `node -e` start and to a static page's paint in the same browser);
//  2. rendering and scrolling 10,000 sessions: frame times (compared to the 16.7 ms frame
//     budget of 60 Hz) and DOM rows (compared to the 10,000 a plain list would create);
//  3. idle CPU of the server process and of the page with 100 active sessions (each with an
//     open VLESS connection), compared to the same with no active session.
// Run: node bench/ui.ts   (builds the renderer first if dist/renderer is missing)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as netServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from '@playwright/test';
import WebSocket from 'ws';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const TICK = 100; // USER_HZ for /proc/<pid>/stat

if (!existsSync(join(ROOT, 'dist', 'renderer', 'index.html'))) {
  spawnSync('npm', ['run', '--silent', 'build:renderer'], { cwd: ROOT, stdio: 'inherit' });
}
// The server starts as users start it, by the bin launcher from the bundle: rebuilt here so it
// is never stale (then the launcher would quietly run the slower sources).
spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-server.ts')], { cwd: ROOT, stdio: 'inherit' });

const ms = (n: number) => `${n.toFixed(0)} ms`;
const pct = (n: number) => `${(n * 100).toFixed(1)} %`;
function line(what: string, value: string, compared: string) {
  console.log(`  ${what.padEnd(52)} ${value.padStart(12)}   vs ${compared}`);
}
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
}

interface Served {
  child: ChildProcess;
  origin: string;
  baseUrl: string;
  token: string;
  listenMs: number;
  dataDir: string;
  stop(): Promise<void>;
}

/** Starts `vpn-access serve` (the bundle) on a free port; resolves when it logs that it listens. */
async function serve(): Promise<Served> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vad-bench-ui-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'vpn-access.mjs'), 'serve', '--port', '0', '--data-dir', dataDir, '--rate-limit', '1000000/60', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--quiet'], {
    env: { ...process.env, VPN_ACCESS_LAUNCH: 'bundle' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const { origin, token, listenMs } = await new Promise<{ origin: string; token: string; listenMs: number }>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d;
      const m = /listening: API (http:\/\/[^\s,]+)\/v2/.exec(out);
      const t = /\n\s+(vad_[A-Za-z0-9_-]+)/.exec(out);
      if (m && t) resolve({ origin: m[1], token: t[1], listenMs: performance.now() - t0 });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (c) => reject(new Error(`server exited ${c}: ${out}`)));
  });
  return {
    child,
    origin,
    baseUrl: `${origin}/v2`,
    token,
    listenMs,
    dataDir,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime (fields 14 and 15)
}

async function api(s: Served, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(s.baseUrl + path, {
    method,
    headers: { Authorization: `Bearer ${s.token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return res.status === 204 ? null : res.json();
}

async function openApp(page: Page, s: Served): Promise<void> {
  await page.addInitScript((t) => localStorage.setItem('vpn-access.token', t), s.token);
}

const cdpSessions = new WeakMap<Page, Awaited<ReturnType<ReturnType<Page['context']>['newCDPSession']>>>();
/** Seconds of main-thread work of the page so far (Chromium's TaskDuration metric). */
async function pageCpuSeconds(page: Page): Promise<number> {
  let cdp = cdpSessions.get(page);
  if (!cdp) {
    cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    cdpSessions.set(page, cdp);
  }
  const { metrics } = await cdp.send('Performance.getMetrics');
  return metrics.find((m) => m.name === 'TaskDuration')?.value ?? 0;
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
const results: Record<string, number> = {};

try {
  // ------------------------------------------------------------ 1. start-up
  console.log('\n== ui: start-up (web mode)');
  const nodeT0 = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  const bareNode = performance.now() - nodeT0;
  const s = await serve();
  const t0 = performance.now();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await openApp(page, s);
  await page.goto(s.origin + '/');
  await page.getByRole('link', { name: 'Sessions', exact: true }).waitFor();
  const readyMs = performance.now() - t0;
  const fcp = (await page.evaluate(`performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN`)) as number;
  const blank = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await blank.route('http://static.bench/', (r) => r.fulfill({ contentType: 'text/html', body: '<!doctype html><h1>A static page</h1>' }));
  await blank.goto('http://static.bench/');
  // (Page code is passed as text: this file is type-checked without the DOM library.)
  const staticFcp = (await blank.evaluate(`new Promise((resolve) => {
    new PerformanceObserver((l) => {
      const e = l.getEntriesByName('first-contentful-paint')[0];
      if (e) resolve(e.startTime);
    }).observe({ type: 'paint', buffered: true });
    setTimeout(() => resolve(NaN), 3000);
  })`)) as number;
  await blank.close();
  line('process start -> server listening', ms(s.listenMs), `bare "node -e 0" start ${ms(bareNode)}`);
  line('navigation -> first contentful paint', ms(fcp), `static HTML page ${ms(staticFcp)}`);
  line('process start -> first paint (listening + FCP)', ms(s.listenMs + fcp), 'budget 1000 ms ("feels immediate")');
  line('navigation -> app ready (zones loaded, nav shown)', ms(readyMs), 'budget 1000 ms');
  results.listen = s.listenMs;
  results.fcp = fcp;

  // ------------------------------------------------------------ 2. 10,000 sessions
  console.log('\n== ui: 10,000 sessions (virtualized list)');
  const zones = ['de-fra', 'de-ber', 'nl-ams', 'gb-lon', 'us-nyc', 'us-lax', 'jp-tyo', 'sg-sin'];
  const tc = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < 10_000) {
        const i = next++;
        await api(s, 'POST', '/sessions', { client_id: `bench-client-${i % 700}`, zone: zones[i % zones.length], reusable: i % 3 === 0 });
      }
    }),
  );
  console.log(`  (created 10,000 sessions through the API in ${ms(performance.now() - tc)})`);
  const tl = performance.now();
  await page.reload();
  await page.getByRole('link', { name: 'Sessions', exact: true }).waitFor();
  await page.getByText('10000 sessions').waitFor({ timeout: 60_000 });
  const loadAll = performance.now() - tl;
  const scroll = (await page.evaluate(`(async () => {
    const el = document.querySelector('[data-testid="session-scroller"]');
    const frames = [];
    const rowsSeen = [];
    let last = performance.now();
    const end = last + 4000;
    await new Promise((resolve) => {
      const step = (t) => {
        frames.push(t - last);
        last = t;
        el.scrollTop += 400; // ~9 rows per frame: a fast fling
        if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) el.scrollTop = 0;
        rowsSeen.push(el.querySelectorAll('[role="row"]').length);
        if (t < end) requestAnimationFrame(step);
        else resolve();
      };
      requestAnimationFrame(step);
    });
    return { frames: frames.slice(1), rows: Math.max(...rowsSeen) };
  })()`)) as { frames: number[]; rows: number };
  const p50 = quantile(scroll.frames, 0.5);
  const p95 = quantile(scroll.frames, 0.95);
  const max = Math.max(...scroll.frames);
  const long = scroll.frames.filter((f) => f > 50).length;
  line('reload -> all 10,000 sessions listed', ms(loadAll), 'budget 3000 ms (20 pages of 500)');
  line('scroll frame time p50', `${p50.toFixed(1)} ms`, '16.7 ms frame budget (60 Hz)');
  line('scroll frame time p95', `${p95.toFixed(1)} ms`, '16.7 ms frame budget (60 Hz)');
  line('scroll frame time max', `${max.toFixed(1)} ms`, '50 ms long-frame threshold');
  line(`frames over 50 ms (of ${scroll.frames.length})`, String(long), '0');
  line('rows in the DOM while scrolling', String(scroll.rows), '10,000 rows of a non-virtualized list');
  results.p95 = p95;

  // ------------------------------------------------------------ 3. idle CPU, 100 active
  console.log('\n== ui: idle CPU, server + page');
  const measure = async (seconds: number) => {
    const c0 = cpuTicks(s.child.pid!);
    const p0 = await pageCpuSeconds(page);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const c1 = cpuTicks(s.child.pid!);
    const p1 = await pageCpuSeconds(page);
    return { server: (c1 - c0) / TICK / seconds, page: (p1 - p0) / seconds };
  };
  await page.getByRole('link', { name: 'Sessions', exact: true }).click();
  const idle0 = await measure(10);

  // 100 sessions, each holding one open VLESS-over-WebSocket connection to a quiet local TCP server.
  const holders: Socket[] = [];
  const sink = netServer((sock) => holders.push(sock));
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const sinkPort = (sink.address() as { port: number }).port;
  const info = await api(s, 'GET', '/server-info');
  const sockets: WebSocket[] = [];
  for (let i = 0; i < 100; i++) {
    const sess = await api(s, 'POST', '/sessions', { client_id: `active-${i}`, zone: 'de-fra', reusable: true });
    const ws = new WebSocket(`ws://127.0.0.1:${info.api_port}${info.ws_path}`);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const id = Buffer.from(sess.id.replace(/-/g, ''), 'hex');
    const port = Buffer.alloc(2);
    port.writeUInt16BE(sinkPort);
    ws.send(Buffer.concat([Buffer.from([0]), id, Buffer.from([0, 1]), port, Buffer.from([1, 127, 0, 0, 1]), Buffer.from('hello')]));
    sockets.push(ws);
  }
  await new Promise((r) => setTimeout(r, 3000));
  const active = (await api(s, 'GET', '/sessions?status=active&limit=500')).sessions.length;
  const idle100 = await measure(10);
  line('server CPU, no active session', pct(idle0.server), 'one core = 100 %');
  line(`server CPU, ${active} active sessions (idle connections)`, pct(idle100.server), `no active session ${pct(idle0.server)}`);
  line('page CPU (main thread), no active session', pct(idle0.page), 'one core = 100 %');
  line(`page CPU (main thread), ${active} active sessions`, pct(idle100.page), `no active session ${pct(idle0.page)}`);
  console.log('  (tray CPU: not measured here — the Electron binary is missing; the tray renders at most once a second)');
  for (const ws of sockets) ws.close();
  for (const h of holders) h.destroy();
  sink.close();
  await page.close();
  await s.stop();
} finally {
  await browser.close();
}
