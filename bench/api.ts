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

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

async function load(opts: autocannon.Options): Promise<{ rps: number; p99: number; non2xx: number }> {
  const r = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...opts });
  return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx };
}

function row(name: string, value: number, unit: string, baseline?: number, baseName?: string): void {
  const ratio = baseline ? ` | baseline ${baseName} ${baseline.toFixed(1)} ${unit} | ratio ${(value / baseline).toFixed(2)}` : '';
  console.log(`${name.padEnd(44)} ${value.toFixed(1).padStart(10)} ${unit}${ratio}`);
}

export async function runApiBench(): Promise<void> {
  const child = fork(new URL('./fixtures/api-target.ts', import.meta.url), [], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const first = await once(createInterface({ input: child.stdout! }), 'line');
  const t = JSON.parse(first[0] as string) as Target;
  const auth = { authorization: `Bearer ${t.token}` };
  try {
    console.log(`\n== API (${CONNECTIONS} connections, ${DURATION} s each, server in its own process) ==`);
    await load({ url: `http://127.0.0.1:${t.barePort}/status`, duration: 2 }); // warm-up
    const bare = await load({ url: `http://127.0.0.1:${t.barePort}/status` });
    await load({ url: `http://127.0.0.1:${t.apiPort}/v2/sessions/${t.sessionId}/status`, headers: auth, duration: 2 });
    const status = await load({ url: `http://127.0.0.1:${t.apiPort}/v2/sessions/${t.sessionId}/status`, headers: auth });
    const create = await load({
      url: `http://127.0.0.1:${t.apiPort}/v2/sessions`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: 'bench-load', zone: 'de-fra', reusable: true }),
    });
    row('bare fastify GET (baseline)', bare.rps, 'req/s');
    row('GET /v2/sessions/{id}/status (auth+rate)', status.rps, 'req/s', bare.rps, 'bare');
    row('POST /v2/sessions (SQLite insert)', create.rps, 'req/s', bare.rps, 'bare');
    row('bare fastify GET p99', bare.p99, 'ms');
    row('GET status p99', status.p99, 'ms', bare.p99, 'bare');
    row('POST /sessions p99', create.p99, 'ms', bare.p99, 'bare');
    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    console.log(
      `targets: authenticated read >= 0.6x bare -> ${met(status.rps / bare.rps >= 0.6)}; creation >= 0.25x bare -> ${met(create.rps / bare.rps >= 0.25)}; ` +
        `non-2xx answers: status ${status.non2xx}, create ${create.non2xx}`,
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
