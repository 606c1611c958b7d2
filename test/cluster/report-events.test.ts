// A node report's events are recorded exactly once: its counters, its events and the
// node's last applied seq commit in one transaction, on SQLite and on PostgreSQL. A report
// applied once and resent (its acknowledgement lost) adds no byte and no event; a report whose
// transaction fails half-way (the process dies, the database refuses) leaves nothing behind,
// and its resend then records everything once. The events keep their order and ids rise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Store } from '../../server/store/store.ts';
import { openDatabase } from '../../server/store/db.ts';
import { PgStore } from '../../server/store/pg/store.ts';
import type { EventInsert } from '../../server/domain.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

/** The operations the test needs, on either store (SQLite answers directly, PostgreSQL with a Promise). */
interface Target {
  ensureCustomer(name: string): Promise<{ id: string }>;
  addNode(n: { name: string; zone: string; public_host: string }): Promise<{ node: { id: string } }>;
  insertSession(s: { id: string; customer_id: string; client_id: string; zone: string; reusable: boolean; created_at: string }): Promise<unknown>;
  placeSession(sessionId: string, nodeId: string): Promise<void>;
  applyNodeReport(nodeId: string, seq: number, adds: { id: string; uploaded_bytes: number; downloaded_bytes: number }[], events: EventInsert[]): Promise<unknown>;
  getSession(id: string): Promise<{ uploaded_bytes: number; downloaded_bytes: number } | undefined>;
  eventsAfter(customerId: string, afterId: number, filter: object, limit: number): Promise<Array<{ id: number; session_id: string; event_type: string; downloaded_bytes: number }>>;
}

async function exactlyOnce(t: Target): Promise<void> {
  const customer = await t.ensureCustomer('report-co');
  const { node } = await t.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const id = randomUUID();
  await t.insertSession({ id, customer_id: customer.id, client_id: 'c1', zone: 'br-sao', reusable: true, created_at: new Date().toISOString() });
  await t.placeSession(id, node.id);
  const ev = (type: EventInsert['event_type'], down: number): EventInsert => ({
    customer_id: customer.id, session_id: id, event_type: type, created_at: new Date().toISOString(), duration: 1, downloaded_bytes: down, uploaded_bytes: 10,
  });

  // Report 1: applied, then resent (the acknowledgement was lost): counted once.
  const first = await t.applyNodeReport(node.id, 1, [{ id, uploaded_bytes: 10, downloaded_bytes: 1000 }], [ev('session_start', 0), ev('session_stats', 1000)]);
  assert.ok(Array.isArray(first) && first.length === 2, 'the stored events are returned');
  assert.equal(await t.applyNodeReport(node.id, 1, [{ id, uploaded_bytes: 10, downloaded_bytes: 1000 }], [ev('session_start', 0), ev('session_stats', 1000)]), false);

  // Report 2 fails inside its transaction (an event the database refuses: no customer), as a
  // crash before the commit would: nothing of it is left, not its bytes, events or seq.
  const broken = { ...ev('session_stats', 3000), customer_id: null as unknown as string };
  await assert.rejects(t.applyNodeReport(node.id, 2, [{ id, uploaded_bytes: 5, downloaded_bytes: 2000 }], [ev('session_stats', 3000), broken]));
  let row = await t.getSession(id);
  assert.deepEqual({ up: row!.uploaded_bytes, down: row!.downloaded_bytes }, { up: 10, down: 1000 });
  assert.equal((await t.eventsAfter(customer.id, 0, {}, 100)).length, 2);

  // Its resend (whole this time) records it once; a further resend adds nothing.
  const resent = [ev('session_stats', 3000), ev('session_end', 3000)];
  assert.ok(Array.isArray(await t.applyNodeReport(node.id, 2, [{ id, uploaded_bytes: 5, downloaded_bytes: 2000 }], resent)));
  assert.equal(await t.applyNodeReport(node.id, 2, [{ id, uploaded_bytes: 5, downloaded_bytes: 2000 }], resent), false);
  row = await t.getSession(id);
  assert.deepEqual({ up: row!.uploaded_bytes, down: row!.downloaded_bytes }, { up: 15, down: 3000 });
  const events = await t.eventsAfter(customer.id, 0, {}, 100);
  assert.deepEqual(events.map((e) => e.event_type), ['session_start', 'session_stats', 'session_stats', 'session_end']);
  for (let i = 1; i < events.length; i++) assert.ok(events[i].id > events[i - 1].id, 'ids rise in order');
  assert.ok(events.every((e) => e.session_id === id));
}

test('SQLite: a report\'s counters and events commit together, once', async () => {
  const dir = tempDir('vad-report-events-');
  const store = new Store(openDatabase(dir));
  try {
    const wrap = <T>(v: T) => Promise.resolve().then(() => v);
    await exactlyOnce({
      ensureCustomer: async (n) => store.ensureCustomer(n),
      addNode: async (n) => store.addNode(n),
      insertSession: async (s) => store.insertSession(s),
      placeSession: async (s, n) => store.placeSession(s, n),
      applyNodeReport: (n, seq, adds, events) => wrap(null).then(() => store.applyNodeReport(n, seq, adds, events)),
      getSession: async (id) => store.getSession(id),
      eventsAfter: async (c, a, f, l) => store.eventsAfter(c, a, f, l),
    });
  } finally {
    store.db.close();
    removeDir(dir);
  }
});

test('PostgreSQL: a report\'s counters and events commit together, once', async (t) => {
  const pg = await startPostgres(t);
  const store = await PgStore.open(await pg.createDatabase('report_events'));
  pg.onDestroy(() => store.close());
  await exactlyOnce({
    ensureCustomer: (n) => store.ensureCustomer(n),
    addNode: (n) => store.addNode(n),
    insertSession: (s) => store.insertSession(s),
    placeSession: (s, n) => store.placeSession(s, n),
    applyNodeReport: (n, seq, adds, events) => store.applyNodeReport(n, seq, adds, events),
    getSession: (id) => store.getSession(id),
    eventsAfter: (c, a, f, l) => store.eventsAfter(c, a, f, l),
  });
});
