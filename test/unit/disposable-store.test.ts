// common/disposable-store.ts: everything the main process starts is released in reverse order,
// each release awaited, failures collected without stopping the rest.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DisposableStore } from '../../common/disposable-store.ts';

test('releases in reverse order, awaiting each before the next; functions and objects alike', async () => {
  const store = new DisposableStore();
  const log: string[] = [];
  store.add(() => {
    log.push('server');
  });
  store.add({
    async dispose() {
      await new Promise((r) => setTimeout(r, 20));
      log.push('ipc');
    },
  });
  const tray = store.add({ dispose: () => void log.push('tray') });
  assert.equal(typeof tray.dispose, 'function', 'add returns what it was given');
  assert.equal(store.isDisposed, false);
  await store.dispose();
  assert.deepEqual(log, ['tray', 'ipc', 'server']);
  assert.equal(store.isDisposed, true);
});

test('a failure does not stop the others; one error is rethrown as it is, several as an AggregateError', async () => {
  const log: string[] = [];
  const one = new DisposableStore();
  one.add(() => void log.push('a'));
  one.add(() => {
    throw new Error('b failed');
  });
  one.add(() => void log.push('c'));
  await assert.rejects(one.dispose(), /b failed/);
  assert.deepEqual(log, ['c', 'a']);

  const two = new DisposableStore();
  two.add(async () => {
    throw new Error('x');
  });
  two.add(() => {
    throw new Error('y');
  });
  await assert.rejects(two.dispose(), (e: unknown) => e instanceof AggregateError && e.errors.map((x: Error) => x.message).join() === 'y,x');
});

test('dispose twice releases once; the second call waits for the first', async () => {
  const store = new DisposableStore();
  let count = 0;
  let finished = false;
  store.add(async () => {
    count++;
    await new Promise((r) => setTimeout(r, 20));
    finished = true;
  });
  const first = store.dispose();
  const second = store.dispose();
  await second;
  assert.equal(finished, true, 'the second call resolved only after the release finished');
  await first;
  assert.equal(count, 1);
});

test('something added after dispose is released at once', async () => {
  const store = new DisposableStore();
  await store.dispose();
  let released = false;
  store.add(() => {
    released = true;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(released, true);
});
