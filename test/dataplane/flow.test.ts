// Limit changes reach a flow that is already waiting on a token bucket (within 1 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Runtime } from '../../server/dataplane/runtime.ts';
import { Flow } from '../../server/dataplane/flow.ts';
import { MemoryDeps } from './helpers/memory-deps.ts';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

function setup(limit: number) {
  const mem = new MemoryDeps();
  mem.setLimits('c-flow', 'session', { upload_speed: limit });
  const id = mem.createSession({ customer: 'c-flow', reusable: true });
  const runtime = new Runtime(mem.deps);
  const conn = { close() {} };
  const admitted = runtime.admit(id, conn);
  assert.ok(admitted.ok);
  let written = 0;
  const flow = new Flow(
    admitted.lease,
    'up',
    { write: (b) => { written += b.length; return true; }, onWritable: (cb) => setImmediate(cb) },
    { pause() {}, resume() {} },
  );
  return { mem, runtime, flow, lease: admitted.lease, written: () => written };
}

// 100 B/s: the bucket's burst (1 KiB) goes at once, then each 256-byte piece waits 2.56 s.
// A limit change must reach the waiting flow within 1 s, whether the limit goes or is raised.
const changes = [
  { name: 'a speed limit removed while a flow waits applies within 1 s', limits: undefined, rest: 'the rest is sent once the limit is gone' },
  { name: 'a speed limit raised while a flow waits applies within 1 s', limits: { upload_speed: 1_000_000 }, rest: 'the rest goes at the new rate' },
];

for (const change of changes) {
  test(change.name, async () => {
    const t = setup(100);
    try {
      t.flow.push(Buffer.alloc(4096));
      await settle(50);
      assert.ok(t.written() < 4096, `only the burst is sent at first (${t.written()})`);
      t.mem.setLimits('c-flow', 'session', change.limits);
      t.runtime.limitsChanged('c-flow');
      await settle(800);
      assert.equal(t.written(), 4096, change.rest);
    } finally {
      t.flow.stop();
      t.lease.release();
    }
  });
}

test('a flow that waits is still shaped when the limit does not change', async () => {
  const t = setup(100);
  try {
    t.flow.push(Buffer.alloc(4096));
    await settle(800);
    assert.ok(t.written() <= 1024 + 256, `no more than the burst and one piece in 0.8 s (${t.written()})`);
  } finally {
    t.flow.stop();
    t.lease.release();
  }
});
