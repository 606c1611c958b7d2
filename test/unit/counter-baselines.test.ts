// server/cluster/counter-baselines.ts: the runtime's absolute totals become the bytes moved since
// the last report, never negative, starting from what is stored plus what is not yet written.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CounterBaselines } from '../../server/cluster/counter-baselines.ts';

test('totals become deltas from the stored counters plus what is unwritten', () => {
  const b = new CounterBaselines();
  assert.deepEqual(b.start('s', { up: 100, down: 1000 }, { up: 5 }), { up: 105, down: 1000 });
  assert.deepEqual(b.advance('s', { uploaded_bytes: 150, downloaded_bytes: 1500 }), { up: 45, down: 500 });
  assert.deepEqual(b.advance('s', { uploaded_bytes: 150 }), { up: 0, down: 0 }, 'a patch without totals moves nothing');
  assert.deepEqual(b.advance('s', { uploaded_bytes: 140, downloaded_bytes: 1600 }), { up: 0, down: 100 }, 'never negative; the baseline keeps the highest');
  assert.deepEqual(b.advance('s', { uploaded_bytes: 160 }), { up: 10, down: 0 });
});

test('a forgotten or unknown session counts from zero', () => {
  const b = new CounterBaselines();
  b.start('s', { up: 10, down: 10 });
  b.forget('s');
  assert.deepEqual(b.advance('s', { uploaded_bytes: 7, downloaded_bytes: 3 }), { up: 7, down: 3 });
});
