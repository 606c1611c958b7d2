// Scale benchmark (not a test): `npm run bench -- scale`. How the cost of the API's reads grows
// with the data. For each size (1k, 10k, 100k sessions; 10 events per session, up to 1M; one
// client per 10 sessions, up to 10k; three hour buckets of usage history per session, spread
// over 30 days) a child process fills a real SQLite database in a new data folder with batched
// SQL in one transaction (the fill time is printed), starts the real server on it (startServer)
// and answers its figures; this process measures them over HTTP with a fixed number of
// sequential requests each. The 1k figure is the baseline of the growth ratio (100k / 1k) and
// of the verdict: flat (under 1.5x for 100x the data), logarithmic (under 10x) or linear.
// Then the window: the web UI opened on each size (bench/scale-window.ts).
// Env: BENCH_SCALE_SIZES (1000,10000,100000), BENCH_REQUESTS per figure (200), BENCH_SCALE_DB
// (sqlite; `sqlite,postgres` also runs every size on a throwaway PostgreSQL 15, test/helpers/postgres.ts).
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fillPostgres, fillSqlite, type FillCounts } from './fixtures/scale-fill.ts';
import { PRUNE_BATCH } from '../server/http/retention.ts';
import { openBrowser, RENDERER_DIR, windowFigures } from './scale-window.ts';
import type { Browser } from '@playwright/test';

const SIZES = (process.env.BENCH_SCALE_SIZES ?? '1000,10000,100000').split(',').map(Number);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const DATABASES = (process.env.BENCH_SCALE_DB ?? 'sqlite').split(',').filter((d): d is Db => d === 'sqlite' || d === 'postgres');
type Db = 'sqlite' | 'postgres';
const REPLAY_EVENTS = 5000;
const DAY = 86_400_000;

interface Target { port: number; barePort: number | null; token: string; sessionId: string; clientId: string; fill: FillCounts; fillMs: number; startMs: number }
type Figures = Record<string, number>;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** `count` sequential GETs; p50 and p99 in ms. Every answer must be 200. */
async function timed(url: string, headers: Record<string, string>, count = REQUESTS): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < count + 5; i++) {
    const t0 = performance.now();
    const res = await fetch(url, { headers });
    const body = await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${Buffer.from(body).toString().slice(0, 200)}`);
    if (i >= 5) ms.push(performance.now() - t0); // the first five warm up
  }
  ms.sort((a, b) => a - b);
  return { p50: pct(ms, 50), p99: pct(ms, 99) };
}

/** Reads an event stream until `want` events came: ms to the first and to the last, and how many arrived. */
async function replay(url: string, headers: Record<string, string>, want: number): Promise<{ first: number; all: number; got: number }> {
  const ac = new AbortController();
  const t0 = performance.now();
  const res = await fetch(url, { headers, signal: ac.signal });
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  let first = NaN;
  let got = 0;
  let tail = '';
  const deadline = setTimeout(() => ac.abort(), 30_000);
  try {
    for await (const chunk of res.body!) {
      tail += Buffer.from(chunk).toString();
      const parts = tail.split('\n\n');
      tail = parts.pop()!;
      for (const p of parts) if (p.includes('data:')) got++;
      if (got > 0 && Number.isNaN(first)) first = performance.now() - t0;
      if (got >= want) break;
    }
  } catch {
    // aborted at the deadline: `got` tells how far it came
  } finally {
    clearTimeout(deadline);
    ac.abort();
  }
  return { first, all: performance.now() - t0, got };
}

async function measure(t: Target, child: ChildProcess, browser: Browser | null): Promise<Figures> {
  const base = `http://127.0.0.1:${t.port}/v2`;
  const auth = { authorization: `Bearer ${t.token}` };
  const f: Figures = { 'fill (ms)': t.fillMs, 'start-up (ms)': t.startMs };
  const add = (name: string, r: { p50: number; p99: number }) => {
    f[`${name} p50 (ms)`] = r.p50;
    f[`${name} p99 (ms)`] = r.p99;
  };
  if (t.barePort) add('bare fastify GET', await timed(`http://127.0.0.1:${t.barePort}/status`, {}));
  add('GET /sessions/{id}/status', await timed(`${base}/sessions/${t.sessionId}/status`, auth));
  add('GET /sessions first page', await timed(`${base}/sessions?limit=50`, auth));
  add('GET /sessions?client_id=', await timed(`${base}/sessions?limit=50&client_id=${t.clientId}`, auth));
  add('GET /sessions?status=active (none match)', await timed(`${base}/sessions?limit=50&status=active`, auth, 20));
  // A deep page: the cursor of the page half-way down (followed with limit=500 pages).
  let cursor: string | null = null;
  for (let seen = 0; seen < t.fill.sessions / 2; seen += 500) {
    const page = (await (await fetch(`${base}/sessions?limit=500${cursor ? `&cursor=${cursor}` : ''}`, { headers: auth })).json()) as { next_cursor: string | null };
    cursor = page.next_cursor;
  }
  add('GET /sessions deep page (cursor)', await timed(`${base}/sessions?limit=50&cursor=${cursor}`, auth));
  const now = Date.now();
  const month = `from=${new Date(now - 30 * DAY).toISOString()}&to=${new Date(now).toISOString()}&step=day`;
  add('GET /usage month (all clients)', await timed(`${base}/usage?${month}`, auth, 20));
  add('GET /usage month ?client_id=', await timed(`${base}/usage?${month}&client_id=${t.clientId}`, auth));
  add('GET /clients (every client)', await timed(`${base}/clients`, auth, 10));
  // What the sessions screen asks for: the clients of its loaded page of sessions (50 named).
  const named = Array.from({ length: Math.min(50, t.fill.clients) }, (_, i) => `client_id=client-${i}`).join('&');
  add('GET /clients?client_id= (50 named: sessions screen)', await timed(`${base}/clients?${named}`, auth));
  // Every client on a monthly client template: one read of the month's bases, not one per client.
  const caps = await fetch(`${base}/customer/limits/client`, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ downloaded_bytes: 1e12, reset_period: 'month' }) });
  if (caps.status !== 200) throw new Error(`client template: ${caps.status} ${await caps.text()}`);
  add('GET /clients, monthly client caps', await timed(`${base}/clients`, auth, 10));
  await fetch(`${base}/customer/limits/client`, { method: 'DELETE', headers: auth });
  const r = await replay(`${base}/sessions/events`, { ...auth, 'last-event-id': '1' }, REPLAY_EVENTS);
  f['SSE replay from id 1: first event (ms)'] = r.first;
  f[`SSE replay from id 1: ${REPLAY_EVENTS} events (ms)`] = r.all;
  const s = await replay(`${base}/sessions/events?session_id=${t.sessionId}`, { ...auth, 'last-event-id': '1' }, 10);
  f['SSE replay ?session_id= from id 1: first event (ms)'] = s.first;
  f['SSE replay ?session_id= from id 1: its 10 events (ms)'] = s.all;
  const tail = await replay(`${base}/sessions/events?session_id=${t.sessionId}&tail=5`, auth, 5);
  f['SSE ?session_id=&tail=5 (the UI): 5 events (ms)'] = tail.all;
  if (browser) Object.assign(f, await windowFigures(browser, `http://127.0.0.1:${t.port}`, t.token, t.fill.sessions));
  child.send({ prune: true });
  const [pr] = (await once(child, 'message')) as [{ ms: number; deleted: number; worstBatchMs: number; batches: number }];
  f['retention prune, whole backlog (ms)'] = pr.ms;
  f['retention prune, events deleted'] = pr.deleted;
  f[`retention prune, mean ${PRUNE_BATCH}-row batch (ms)`] = pr.ms / pr.batches;
  f[`retention prune, worst ${PRUNE_BATCH}-row batch (ms)`] = pr.worstBatchMs;
  return f;
}

function verdict(ratio: number): string {
  if (!Number.isFinite(ratio)) return '';
  return ratio < 1.5 ? 'flat' : ratio < 10 ? 'logarithmic' : 'linear';
}

function print(results: { size: number; fill: FillCounts; f: Figures }[]): void {
  const sizes = results.map((r) => r.size);
  console.log('\nrows per size: ' + results.map((r) => `${r.size}: ${r.fill.sessions} sessions, ${r.fill.events} events, ${r.fill.clients} clients, ${r.fill.buckets} usage buckets`).join('; '));
  const head = 'figure'.padEnd(52) + sizes.map((s) => `${s / 1000}k`.padStart(10)).join('') + '   ratio  growth';
  console.log(`\n${head}\n${'-'.repeat(head.length)}`);
  for (const name of Object.keys(results[0].f)) {
    const vals = results.map((r) => r.f[name]);
    const ratio = vals[vals.length - 1] / vals[0];
    const growth = name.startsWith('bare') || name.includes('deleted') || name.startsWith('fill') ? '(baseline / size)' : verdict(ratio);
    const cells = vals.map((v) => (v === undefined || Number.isNaN(v) ? '-' : v >= 100 ? v.toFixed(0) : v.toFixed(2)).padStart(10)).join('');
    console.log(`${name.padEnd(52)}${cells}${(Number.isFinite(ratio) ? ratio.toFixed(1) + 'x' : '-').padStart(8)}  ${growth}`);
  }
}

async function main(): Promise<void> {
  const browser = await openBrowser();
  for (const db of DATABASES) {
    console.log(`\nscale benchmark: ${db}, sizes ${SIZES.join(', ')} sessions; ${REQUESTS} sequential requests per figure (fewer for the heavy ones); server in its own process`);
    const results: { size: number; fill: FillCounts; f: Figures }[] = [];
    for (const size of SIZES) {
      const child = fork(new URL(import.meta.url), ['--target', String(size), String(size === SIZES[0]), db], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
      try {
        const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
        const t = JSON.parse(line) as Target;
        console.log(`${size} sessions: filled in ${t.fillMs.toFixed(0)} ms (${t.fill.events} events), server started in ${t.startMs.toFixed(0)} ms`);
        results.push({ size, fill: t.fill, f: await measure(t, child, browser) });
      } finally {
        child.disconnect();
        await once(child, 'exit');
      }
    }
    print(results);
  }
  await browser?.close();
}

/** The child: fills a new data folder, starts the server on it and prunes when asked. */
async function target(size: number, withBare: boolean, db: Db): Promise<void> {
  const { startServer } = await import('../server/serve.ts');
  const dir = mkdtempSync(join(tmpdir(), 'vad-bench-scale-'));
  const pg = db === 'postgres' ? await (await import('../test/helpers/postgres.ts')).startPostgres() : null;
  const database = pg ? await pg.createDatabase('scale') : undefined;
  const opts = {
    dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: null, dataPlane: null, webhooks: false as const, database, rendererDir: RENDERER_DIR,
    rateLimit: { max: 1_000_000_000, windowMs: 60_000 },
    eventRetentionDays: 3650, // no prune at start: the prune is measured on its own below
  };
  const first = await startServer(opts); // the schema, the first customer and its owner token
  const token = first.ownerToken!;
  const customerId = (await first.services.data.findToken(token))!.customer_id;
  await first.close();
  const t0 = performance.now();
  const fill = database ? await fillPostgres(database, customerId, size) : fillSqlite(dir, customerId, size);
  const fillMs = performance.now() - t0;
  const t1 = performance.now();
  const srv = await startServer(opts);
  const startMs = performance.now() - t1;
  let barePort: number | null = null;
  let bare: { close(): Promise<unknown> } | null = null;
  if (withBare) {
    const Fastify = (await import('fastify')).default;
    const app = Fastify({ logger: false });
    app.get('/status', async () => ({ client_id: 'bench', status: 'created', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0, paused: false }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    barePort = (app.server.address() as { port: number }).port;
    bare = app;
  }
  process.on('message', async () => {
    // The retention prune as server/http/retention.ts runs it: PRUNE_BATCH rows a statement, 14 days.
    const cutoff = new Date(Date.now() - 14 * DAY).toISOString();
    const t = performance.now();
    let deleted = 0;
    let worst = 0;
    let batches = 0;
    for (;;) {
      const b0 = performance.now();
      const n = await srv.services.data.pruneEventsBatch(cutoff, PRUNE_BATCH);
      worst = Math.max(worst, performance.now() - b0);
      deleted += n;
      batches++;
      if (n < PRUNE_BATCH) break;
      await new Promise<void>((r) => setImmediate(r));
    }
    process.send!({ ms: performance.now() - t, deleted, worstBatchMs: worst, batches });
  });
  process.on('disconnect', async () => {
    await srv.close();
    await bare?.close();
    await pg?.destroy();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
  process.stdout.write(JSON.stringify({ port: srv.apiPort, barePort, token, sessionId: fill.sessionId, clientId: fill.clientId, fill, fillMs, startMs } satisfies Target) + '\n');
}

if (process.argv[2] === '--target') await target(Number(process.argv[3]), process.argv[4] === 'true', process.argv[5] === 'postgres' ? 'postgres' : 'sqlite');
else await main();
