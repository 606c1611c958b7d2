// API benchmark: authenticated reads and writes against a bare fastify route measured in
// the same run, and SSE delivery latency to many subscribers. Prints figures, never asserts.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { EventSource } from 'eventsource';

interface Target { apiPort: number; barePort: number; token: string; sessionId: string }

const DURATION = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = 50;
/** Interleaved rounds of bare, status and creation. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

type Figure = { rps: number; p99: number; non2xx: number };

async function load(opts: autocannon.Options): Promise<Figure> {
  const r = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...opts });
  return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx };
}

/** A figure; with a baseline, the ratio (given: the median of paired rounds; else value / baseline). */
function row(name: string, value: number, unit: string, baseline?: number, baseName?: string, ratio = baseline ? value / baseline : NaN, note = ''): void {
  const r = baseline ? ` | baseline ${baseName} ${baseline.toFixed(1)} ${unit} | ratio ${ratio.toFixed(2)}${note}` : '';
  console.log(`${name.padEnd(44)} ${value.toFixed(1).padStart(10)} ${unit}${r}`);
}

const median = (xs: number[]) => pct([...xs].sort((a, b) => a - b), 50);

export async function runApiBench(): Promise<void> {
  const child = fork(new URL('./fixtures/api-target.ts', import.meta.url), [], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const first = await once(createInterface({ input: child.stdout! }), 'line');
  const t = JSON.parse(first[0] as string) as Target;
  const auth = { authorization: `Bearer ${t.token}` };
  try {
    console.log(`\n== API (${CONNECTIONS} connections, ${DURATION} s each, server in its own process; ${ROUNDS} interleaved rounds, medians) ==`);
    await load({ url: `http://127.0.0.1:${t.barePort}/status`, duration: 2 }); // warm-up
    await load({ url: `http://127.0.0.1:${t.apiPort}/v2/sessions/${t.sessionId}/status`, headers: auth, duration: 2 });
    // Each round measures the three in turn, so a spell of load from elsewhere on the machine falls on
    // the baseline too; a ratio is the median of the rounds' own ratios.
    const rounds: { bare: Figure; status: Figure; create: Figure }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const bare = await load({ url: `http://127.0.0.1:${t.barePort}/status` });
      const status = await load({ url: `http://127.0.0.1:${t.apiPort}/v2/sessions/${t.sessionId}/status`, headers: auth });
      const create = await load({
        url: `http://127.0.0.1:${t.apiPort}/v2/sessions`,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'bench-load', zone: 'de-fra', reusable: true }),
      });
      rounds.push({ bare, status, create });
    }
    const med = (f: (r: (typeof rounds)[number]) => number) => median(rounds.map(f));
    const ratios = (k: 'status' | 'create') => rounds.map((r) => r[k].rps / r.bare.rps);
    const bareRps = med((r) => r.bare.rps);
    const each = (k: 'status' | 'create') => ` (rounds ${ratios(k).map((x) => x.toFixed(2)).join(', ')})`;
    row('bare fastify GET (baseline)', bareRps, 'req/s');
    row('GET /v2/sessions/{id}/status (auth+rate)', med((r) => r.status.rps), 'req/s', bareRps, 'bare', median(ratios('status')), each('status'));
    row('POST /v2/sessions (SQLite insert)', med((r) => r.create.rps), 'req/s', bareRps, 'bare', median(ratios('create')), each('create'));
    const bareP99 = med((r) => r.bare.p99);
    row('bare fastify GET p99', bareP99, 'ms');
    row('GET status p99', med((r) => r.status.p99), 'ms', bareP99, 'bare');
    row('POST /sessions p99', med((r) => r.create.p99), 'ms', bareP99, 'bare');
    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    const non2xx = (k: 'status' | 'create') => rounds.reduce((n, r) => n + r[k].non2xx, 0);
    console.log(
      `targets: authenticated read >= 0.6x bare -> ${met(median(ratios('status')) >= 0.6)}; creation >= 0.25x bare -> ${met(median(ratios('create')) >= 0.25)}; ` +
        `non-2xx answers: status ${non2xx('status')}, create ${non2xx('create')}`,
    );

    console.log('\n== SSE delivery (100 subscribers, 200 events/s for 5 s) ==');
    const SUBS = 100;
    const latencies: number[] = [];
    const sources: EventSource[] = [];
    let received = 0;
    await Promise.all(
      Array.from({ length: SUBS }, () => {
        const es = new EventSource(`http://127.0.0.1:${t.apiPort}/v2/sessions/events`, {
          fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } }),
        });
        sources.push(es);
        es.onmessage = (m) => {
          const e = JSON.parse(m.data) as { uploaded_bytes: number };
          latencies.push(performance.timeOrigin + performance.now() - e.uploaded_bytes);
          received++;
        };
        return new Promise<void>((resolve, reject) => {
          es.onopen = () => resolve();
          es.onerror = (err) => reject(new Error(`subscriber failed: ${err.message}`));
        });
      }),
    );
    child.send({ publish: { rate: 200, seconds: 5 } });
    const [done] = (await once(child, 'message')) as [{ published: number }];
    const deadline = Date.now() + 5000;
    while (received < done.published * SUBS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const es of sources) es.close();
    latencies.sort((a, b) => a - b);
    row('SSE delivery p50', pct(latencies, 50), 'ms');
    row('SSE delivery p99', pct(latencies, 99), 'ms', 50, 'target');
    console.log(`delivered ${received} of ${done.published * SUBS} (events x subscribers); target p99 < 50 ms -> ${pct(latencies, 99) < 50 ? 'met' : 'NOT met'}`);
  } finally {
    child.disconnect();
    await once(child, 'exit');
  }
}

await runApiBench();
