// The counter journal (server/cluster/journal.ts) on a real file: what is recorded survives a
// process that stops without closing it (the state a kill -9 leaves), reports keep their seqs
// until acknowledged, a torn last line is skipped, the file is compacted, recovered sessions are
// no longer "connected", and a journal whose store holds later seqs renumbers after them.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CounterJournal, REPORT_MAX_EVENTS } from '../../server/cluster/journal.ts';
import { silentLogger } from '../../server/log.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const ev = (sessionId: string, i: number) => ({ customerId: 'c', sessionId, type: 'session_stats' as const, duration: i, uploaded_bytes: i, downloaded_bytes: i });
const turn = () => new Promise<void>((r) => setImmediate(r));

test('recorded bytes and events survive an unclosed journal, reports keep their seqs until acknowledged', async () => {
  const dir = tempDir('vad-journal-');
  try {
    const file = join(dir, 'j.log');
    const a = CounterJournal.open(file, silentLogger);
    a.record('s1', { up: 10, down: 100, status: 'active', connections: 1 });
    a.record('s1', { up: 5, down: 50 });
    a.record('s2', { up: 1, down: 2, status: 'idle', connections: 0 });
    a.event(ev('s1', 1));
    const r1 = a.seal()!;
    assert.equal(r1.seq, 1);
    assert.deepEqual(r1.counters.s1, { up: 15, down: 150, status: 'active', connections: 1 });
    a.record('s1', { up: 7, down: 70 });
    a.event(ev('s1', 2));
    const r2 = a.seal()!;
    assert.equal(r2.seq, 2);
    a.ack(1);
    a.record('s3', { up: 3, down: 30 });
    assert.deepEqual(a.unapplied('s1'), { up: 7, down: 70 });
    await turn(); // the end of the turn wrote it; the process "dies" here without close()

    const b = CounterJournal.open(file, silentLogger);
    assert.equal(b.id, a.id, 'the journal keeps its identity');
    assert.deepEqual(b.reports.map((r) => r.seq), [2], 'report 1 was acknowledged, report 2 was not');
    assert.deepEqual(b.reports[0].counters.s1, { up: 7, down: 70 });
    assert.deepEqual(b.reports[0].events, [ev('s1', 2)]);
    assert.deepEqual([...b.pending], [['s3', { up: 3, down: 30 }]]);
    assert.equal(b.seal()!.seq, 3, 'numbering goes on after the last seq');
    b.close();
  } finally {
    removeDir(dir);
  }
});

test('sessions the dead process had connected are listed and no longer reported active; a torn last line is skipped', async () => {
  const dir = tempDir('vad-journal-');
  try {
    const file = join(dir, 'j.log');
    const a = CounterJournal.open(file, silentLogger);
    a.record('on', { up: 1, down: 1, status: 'active', connections: 2, duration: 4 });
    a.record('off', { up: 1, down: 1, status: 'idle', connections: 0 });
    a.seal();
    a.record('later', { up: 9, down: 9, status: 'active', connections: 1 });
    await turn();
    appendFileSync(file, '{"d":["torn",1,'); // a write cut short
    const b = CounterJournal.open(file, silentLogger);
    assert.deepEqual(b.carriedBefore.sort(), ['later', 'on']);
    assert.deepEqual(b.reports[0].counters.on, { up: 1, down: 1, duration: 4 });
    assert.deepEqual(b.reports[0].counters.off, { up: 1, down: 1, status: 'idle' });
    assert.deepEqual(b.pending.get('later'), { up: 9, down: 9 });
    assert.equal(b.pending.has('torn'), false);
    // The open rewrote the file: appends after it start on a line of their own.
    b.record('after', { up: 1, down: 0 });
    await turn();
    const c = CounterJournal.open(file, silentLogger);
    assert.deepEqual(c.pending.get('after'), { up: 1, down: 0 });
    b.close();
    c.close();
    // Connected sessions stay listed after their reports are acknowledged and the file rewritten,
    // until the repair says it closed them.
    const d = CounterJournal.open(file, silentLogger);
    d.record('open', { up: 1, down: 1, status: 'active', connections: 1 });
    d.ack(d.seal()!.seq);
    d.renumberAfter(1000); // rewrites the file
    await turn();
    const e = CounterJournal.open(file, silentLogger);
    assert.ok(e.carriedBefore.includes('open'));
    e.forgetCarried(['open', 'later', 'on']);
    await turn();
    assert.deepEqual(CounterJournal.open(file, silentLogger).carriedBefore, []);
    d.close();
    e.close();
  } finally {
    removeDir(dir);
  }
});

test('reports are bounded in events; the file is compacted; renumbering after a store that holds later seqs', async () => {
  const dir = tempDir('vad-journal-');
  try {
    const file = join(dir, 'j.log');
    const a = CounterJournal.open(file, silentLogger);
    for (let i = 0; i < REPORT_MAX_EVENTS + 10; i++) a.event(ev('s', i));
    const first = a.seal()!;
    assert.equal(first.events.length, REPORT_MAX_EVENTS);
    assert.equal(a.seal()!.events.length, 10);
    a.ack(2);
    // Many small records: the file stays small (rewritten past its bound), the sums stay exact.
    for (let i = 0; i < 40_000; i++) {
      a.record(`s${i % 50}`, { up: 1, down: 2 });
      if (i % 1000 === 999) await turn();
    }
    await turn();
    assert.ok(statSync(file).size < 3 * 1024 * 1024, `journal file ${statSync(file).size} bytes`);
    const b = CounterJournal.open(file, silentLogger);
    let up = 0, down = 0;
    for (const d of b.pending.values()) {
      up += d.up;
      down += d.down;
    }
    assert.deepEqual({ up, down }, { up: 40_000, down: 80_000 });
    b.seal();
    b.renumberAfter(41);
    assert.deepEqual(b.reports.map((r) => r.seq), [42]);
    b.close();
    const c = CounterJournal.open(file, silentLogger);
    assert.deepEqual(c.reports.map((r) => r.seq), [42]);
    assert.equal(c.seal(), null);
    c.close();
    assert.match(readFileSync(file, 'utf8'), /^\{"h":/);
  } finally {
    removeDir(dir);
  }
});
