// The event bus (events/bus.ts): subscriber filters, persist-then-deliver, and the data plane's
// events kept through a full disk.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventBus, matches } from '../../server/events/bus.ts';
import { silentLogger } from '../../server/log.ts';
import { openDatabase } from '../../server/store/db.ts';
import { Store } from '../../server/store/store.ts';
import { removeDir, tempDir, withStore } from '../helpers/server.ts';

test('filters: session ids and types, each a set; empty lists mean everything', () => {
  const e = { id: 1, session_id: 's1', event_type: 'session_start' as const, created_at: '', duration: 0, downloaded_bytes: 0, uploaded_bytes: 0 };
  assert.equal(matches({}, e), true);
  assert.equal(matches({ sessionIds: [], types: [] }, e), true);
  assert.equal(matches({ sessionIds: ['s2', 's1'] }, e), true);
  assert.equal(matches({ sessionIds: ['s2'] }, e), false);
  assert.equal(matches({ types: ['session_end', 'session_start'] }, e), true);
  assert.equal(matches({ types: ['session_end'] }, e), false);
  assert.equal(matches({ sessionIds: ['s1'], types: ['session_end'] }, e), false);
});

test('the bus persists before delivering, with increasing ids, only to matching subscribers of the customer', () => {
  withStore((store) => {
    const bus = new EventBus(store);
    const got: Record<string, number[]> = { a: [], aEnd: [], b: [] };
    const unsubA = bus.subscribe({ customerId: 'A', filter: {}, deliver: (e) => {
      assert.equal(store.eventsAfter('A', e.id - 1, {}, 1)[0]?.id, e.id, 'stored before delivery');
      got.a.push(e.id);
    } });
    bus.subscribe({ customerId: 'A', filter: { types: ['session_end'] }, deliver: (e) => got.aEnd.push(e.id) });
    bus.subscribe({ customerId: 'B', filter: {}, deliver: (e) => got.b.push(e.id) });
    assert.equal(bus.subscriberCount, 3);
    const ids = [
      bus.publish({ customerId: 'A', sessionId: 's', type: 'session_start', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0 }).id,
      bus.publish({ customerId: 'A', sessionId: 's', type: 'session_end', duration: 5, uploaded_bytes: 1, downloaded_bytes: 2 }).id,
      bus.publish({ customerId: 'C', sessionId: 't', type: 'session_end', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0 }).id,
    ];
    assert.ok(ids[0] < ids[1] && ids[1] < ids[2]);
    assert.deepEqual(got, { a: [ids[0], ids[1]], aEnd: [ids[1]], b: [] });
    unsubA();
    assert.equal(bus.subscriberCount, 2);
    const stored = store.eventsAfter('A', 0, {}, 10);
    assert.deepEqual(stored.map((e) => [e.id, e.event_type, e.duration, e.uploaded_bytes, e.downloaded_bytes]), [
      [ids[0], 'session_start', 0, 0, 0],
      [ids[1], 'session_end', 5, 1, 2],
    ]);
  }, 'vad-bus-');
});

test('a full disk: the data plane\'s events wait in order with their own times, and are stored and delivered once it takes writes', async (t) => {
  const dir = tempDir();
  const store = new Store(openDatabase(dir));
  t.after(() => {
    store.db.close();
    removeDir(dir);
  });
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (o: object | string) => void warnings.push(String(o)) };
  const bus = new EventBus(store, log);
  t.after(() => bus.close());
  const delivered: number[] = [];
  bus.subscribe({ customerId: 'A', filter: {}, deliver: (e) => delivered.push(e.duration) });
  const event = (n: number) => ({ customerId: 'A', sessionId: 's', type: 'session_stats' as const, duration: n, uploaded_bytes: n, downloaded_bytes: 0 });
  // The file may not grow: SQLite refuses as on a full disk, once the free pages are used.
  const { page_count } = store.db.prepare('PRAGMA page_count').get() as { page_count: number };
  store.db.exec(`PRAGMA max_page_count = ${page_count}`);
  let n = 0;
  while (bus.keptCount === 0 && n < 100_000) bus.publishOrKeep(event(n++));
  assert.equal(bus.keptCount, 1, 'the database refused one');
  const firstKept = n - 1;
  for (let i = 0; i < 5; i++) bus.publishOrKeep(event(n++));
  assert.equal(bus.keptCount, 6, 'later events wait behind it, in order');
  const keptAt = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 1200));
  assert.equal(bus.keptCount, 6, 'still refused: still kept');
  store.db.exec('PRAGMA max_page_count = 1073741823');
  await new Promise((r) => setTimeout(r, 1200));
  assert.equal(bus.keptCount, 0);
  assert.deepEqual(delivered, Array.from({ length: n }, (_, i) => i), 'every event delivered once, in order');
  const stored = store.eventsAfter('A', 0, {}, n + 10);
  assert.deepEqual(stored.map((e) => e.duration), Array.from({ length: n }, (_, i) => i), 'every event stored once, in order');
  assert.ok(stored.slice(firstKept).every((e) => e.created_at <= keptAt), 'kept events keep the time they happened');
  assert.deepEqual(warnings, []);
});
