// common/coalescer.ts: look-ups asked for by events, each id at most once per perIdMs, all ids
// at most perSecond a second; requests in between merge, none is lost.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Coalescer } from '../../common/coalescer.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a burst for one id is one look-up now and one after perIdMs, not one per request', async () => {
  const runs: string[] = [];
  const c = new Coalescer(async (id) => void runs.push(id), { perIdMs: 300, perSecond: 100 });
  for (let i = 0; i < 50; i++) c.request('a');
  assert.deepEqual(runs, ['a']);
  await sleep(450);
  assert.deepEqual(runs, ['a', 'a'], 'the requests made meanwhile merged into one later look-up');
  await sleep(400);
  assert.deepEqual(runs, ['a', 'a']);
  c.close();
});

test('many ids: at most perSecond look-ups a second, every id looked up in the end', async () => {
  const runs: Array<{ id: string; at: number }> = [];
  const c = new Coalescer(async (id) => void runs.push({ id, at: Date.now() }), { perIdMs: 1000, perSecond: 10 });
  const t0 = Date.now();
  for (let i = 0; i < 25; i++) c.request(`s${i}`);
  assert.equal(runs.length, 10, 'the bucket starts full');
  for (let i = 0; i < 60 && runs.length < 25; i++) await sleep(50);
  assert.equal(new Set(runs.map((r) => r.id)).size, 25);
  const took = runs.at(-1)!.at - t0;
  assert.ok(took >= 1300, `15 more at 10 a second take about 1.5 s, not ${took} ms`);
  c.close();
});

test('close drops what waits', async () => {
  const runs: string[] = [];
  const c = new Coalescer(async (id) => void runs.push(id), { perIdMs: 100, perSecond: 1 });
  c.request('a');
  c.request('b');
  c.close();
  c.request('c');
  await sleep(1200);
  assert.deepEqual(runs, ['a']);
});
