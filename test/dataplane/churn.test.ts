// Connection churn from one session: 1,000 new connections a second for 3 s,
// through the proxy (plain-http requests) and over VLESS tcp, against the real service (SQLite
// store, event bus). A reconnection within the grace keeps the session active (no
// session_start/session_end pair per connection), and the per-session connection rate limit
// refuses the excess cheaply, so the events table stays small, the log quiet, and the event
// loop healthy. The load runs in its own process (helpers/churn-load.ts).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { startFileServer, type FileServer } from './helpers/targets.ts';
import type { Logger } from '../../server/domain.ts';

const RATE = 1000;
const SECONDS = 3;
/** p99 of the server's event-loop delay under the churn (the load runs in another process); measured
 *  20-180 ms on the shared 2-core test machine (load 5-9), the bound leaves room for its load. */
const P99_BOUND_MS = 250;
/** Events one session may leave for the whole run: start, a few stats/heartbeats, end. */
const EVENTS_BOUND = 12;

let srv: RunningServer;
let files: FileServer;
let dir: string;
let token: string;
let logLines = 0;
const count = () => { logLines++; };
const logger: Logger = { info: count, warn: count, error: count, debug: () => {} };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vad-churn-'));
  srv = await startServer({ dataDir: dir, port: 0, egress: 'allow-all', logger });
  token = srv.ownerToken!;
  files = await startFileServer({ small: 2000 });
});
after(async () => {
  await srv?.close();
  await files?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function createSession(client: string): Promise<string> {
  const res = await fetch(`${srv.baseUrl}/sessions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ client_id: client, zone: 'de-fra', reusable: true }),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { id: string }).id;
}

function load(mode: 'proxy' | 'vless', port: number, id: string): Promise<{ started: number; skipped: number; answered: number; refused: number; errors: number; ms: number }> {
  const script = join(import.meta.dirname, 'helpers', 'churn-load.ts');
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, mode, String(port), id, String(files.port), String(RATE), String(SECONDS)], { timeout: (SECONDS + 20) * 1000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
}

const eventRows = (id: string) => Number((srv.services.sqlite!.store.db.prepare('SELECT COUNT(*) AS n FROM events WHERE session_id = ?').get(id) as { n: number }).n);

for (const mode of ['proxy', 'vless'] as const) {
  test(`${RATE} connections a second from one session for ${SECONDS} s (${mode}): few events, a quiet log, a healthy event loop`, async () => {
    const id = await createSession(`churn-${mode}`);
    const port = mode === 'proxy' ? srv.proxyPort! : srv.vlessTcpPort!;
    const logsBefore = logLines;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const r = await load(mode, port, id);
    delay.disable();
    const p99 = delay.percentile(99) / 1e6;
    const max = delay.max / 1e6;
    process.stdout.write(`# ${mode}: ${JSON.stringify(r)} event loop p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms, log lines ${logLines - logsBefore}\n`);
    assert.ok(r.started >= RATE * SECONDS * 0.9, `the load opened only ${r.started} connections`);
    assert.ok(r.answered > 0, 'no connection got through');
    // the session ends once, after the grace
    const st = await fetch(`${srv.baseUrl}/sessions/${id}/status`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(st.status, 200);
    await new Promise((res) => setTimeout(res, 3000));
    const rows = eventRows(id);
    const types = (srv.services.sqlite!.store.db.prepare('SELECT event_type AS t, COUNT(*) AS n FROM events WHERE session_id = ? GROUP BY event_type').all(id) as { t: string; n: number }[]);
    process.stdout.write(`# ${mode}: event rows ${rows} ${JSON.stringify(types)}\n`);
    assert.ok(rows <= EVENTS_BOUND, `${rows} events for one session: ${JSON.stringify(types)}`);
    assert.equal(types.find((t) => t.t === 'session_start')?.n, 1);
    assert.equal(types.find((t) => t.t === 'session_end')?.n, 1);
    assert.ok(r.refused > 0, 'the per-session connection rate limit refused nothing');
    assert.ok(p99 < P99_BOUND_MS, `event-loop delay p99 ${p99.toFixed(1)} ms under churn`);
    assert.ok(logLines - logsBefore <= 5, `${logLines - logsBefore} log lines for one churning session`);
  });
}
