// The event prune: a large backlog of old events is deleted in batches, with
// the event loop free between them, so relays on the same thread are not stalled; recent events
// stay. Against a real SQLite store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Store } from '../../server/store/store.ts';
import { openDatabase } from '../../server/store/db.ts';
import { PRUNE_BATCH, startEventRetention } from '../../server/http/retention.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const OLD = 200_000;
const RECENT = 1000;

test(`pruning ${OLD} old events runs in batches: the event loop keeps turning, recent events stay`, async () => {
  const dir = tempDir('vad-prune-');
  const store = new Store(openDatabase(dir));
  try {
    const insert = store.db.prepare('INSERT INTO events (customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes) VALUES (?, ?, ?, ?, 0, 0, 0)');
    store.db.exec('BEGIN');
    for (let i = 0; i < OLD; i++) insert.run('c', `s${i % 100}`, 'session_stats', '2020-01-01T00:00:00.000Z');
    const now = new Date().toISOString();
    for (let i = 0; i < RECENT; i++) insert.run('c', 's', 'session_stats', now);
    store.db.exec('COMMIT');
    const count = () => Number((store.db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n);

    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    // what a relay's timer sees while the prune runs: the counts between batches
    const seen = new Set<number>();
    let ticks = 0;
    const ticker = setInterval(() => { ticks++; seen.add(count()); }, 1);
    const t0 = performance.now();
    const stop = startEventRetention(store, 7 * 86_400_000);
    const deadline = performance.now() + 60_000;
    while (count() > RECENT && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const ms = performance.now() - t0;
    clearInterval(ticker);
    delay.disable();
    stop();
    const maxStall = delay.max / 1e6;
    process.stdout.write(`# pruned ${OLD} rows in ${Math.round(ms)} ms; ${ticks} timer ticks, ${seen.size} intermediate counts; longest stall ${maxStall.toFixed(1)} ms\n`);
    assert.equal(count(), RECENT, 'old events deleted, recent ones kept');
    const intermediate = [...seen].filter((n) => n > RECENT && n < OLD + RECENT);
    assert.ok(intermediate.length >= 10, `the prune ran as one block (timers saw ${intermediate.length} intermediate states)`);
    // No block deletes more than a batch or two between two turns of the event loop: what the
    // relays' timers see shrinks in steps of PRUNE_BATCH. (The longest stall in milliseconds is
    // printed above and measured in the benchmark; on a loaded 2-core machine it is not a bound.)
    const observed = [OLD + RECENT, ...[...seen].sort((a, b) => b - a), RECENT];
    const biggestStep = Math.max(...observed.slice(1).map((n, i) => observed[i]! - n));
    assert.ok(biggestStep <= 2 * PRUNE_BATCH, `${biggestStep} rows went between two turns of the event loop (batch ${PRUNE_BATCH})`);
  } finally {
    store.db.close();
    removeDir(dir);
  }
});
