// The event bus (events/bus.ts): subscriber filters, and persist-then-deliver.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventBus, matches } from '../../server/events/bus.ts';
import { withStore } from '../helpers/server.ts';

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
