// The renderer's batcher (renderer/src/store/batcher.ts): what arrives during a burst is handed
// over in one batch, in order; cancel drops what waits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { batcher } from '../../renderer/src/store/batcher.ts';

test('a burst is handed over in one batch, in arrival order, after the first item waited its time', async () => {
  const batches: number[][] = [];
  const b = batcher<number>(30, (batch) => batches.push(batch));
  b.push(1);
  b.push(2);
  await sleep(10);
  b.push(3);
  assert.deepEqual(batches, []);
  await sleep(40);
  assert.deepEqual(batches, [[1, 2, 3]]);
  b.push(4);
  await sleep(50);
  assert.deepEqual(batches, [[1, 2, 3], [4]]);
});

test('cancel drops what waits and the timer', async () => {
  const batches: number[][] = [];
  const b = batcher<number>(20, (batch) => batches.push(batch));
  b.push(1);
  b.cancel();
  await sleep(40);
  assert.deepEqual(batches, []);
  b.push(2);
  await sleep(40);
  assert.deepEqual(batches, [[2]]);
});
