// The event log across instances: ids strictly increasing and never a gap that fills later
// (a reader that has seen id N never afterwards finds an id below N). First the trap itself,
// shown on a plain sequence, and the same interleaving on the store; then many concurrent
// writers against a polling reader; then the feed delivering every instance's events to a
// subscriber on another instance, once each and in order, woken by NOTIFY.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after as afterAll, before as beforeAll, test } from 'node:test';
import pg from 'pg';
import type { SessionEvent } from '../../server/contract/schemas.ts';
import { PgEventFeed } from '../../server/events/pg-feed.ts';
import { PgListener } from '../../server/store/pg/listener.ts';
import { CHANNELS, PgStore, type EventInsert } from '../../server/store/pg/store.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';

/** One server for the file (initdb is the slow part); each test takes its own database. */
let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server.destroy());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ev = (customer_id: string, i: number): EventInsert => ({
  customer_id,
  session_id: `s-${i % 5}`,
  event_type: i % 2 ? 'session_heartbeat' : 'session_stats',
  created_at: new Date().toISOString(),
  duration: i,
  downloaded_bytes: i,
  uploaded_bytes: i,
});

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test('the trap: a sequence lets a lower id commit behind a reader; the event counter does not', async (t) => {
  const url = await server.createDatabase('trap');
  const store = await PgStore.open(url);
  const c1 = new pg.Client({ connectionString: url });
  const c2 = new pg.Client({ connectionString: url });
  await c1.connect();
  await c2.connect();
  t.after(() => Promise.all([store.close(), c1.end(), c2.end()]));

  // A bigserial: writer 1 takes 1 and stays open, writer 2 takes 2 and commits, the reader
  // sees 2 and moves on, then 1 commits behind it: lost for that reader.
  await c1.query('CREATE TABLE seq_log (id BIGSERIAL PRIMARY KEY, v TEXT)');
  await c1.query('BEGIN');
  await c1.query("INSERT INTO seq_log (v) VALUES ('one')");
  await c2.query("INSERT INTO seq_log (v) VALUES ('two')");
  const seen = (await store.pool.query('SELECT id FROM seq_log WHERE id > 0 ORDER BY id')).rows.map((r) => Number(r.id));
  assert.deepEqual(seen, [2]);
  await c1.query('COMMIT');
  const after = (await store.pool.query('SELECT id FROM seq_log WHERE id > $1 ORDER BY id', [2])).rows;
  assert.deepEqual(after, [], 'the reader polling id > 2 never sees id 1: the gap filled behind it');

  // The same interleaving on the event log: writer 2 cannot even take its id before 1 ends.
  await c1.query('BEGIN');
  await c1.query(
    `WITH c AS (UPDATE event_counter SET last_id = last_id + 1 RETURNING last_id)
     INSERT INTO events (id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes)
     SELECT last_id, 'acme', 's', 'session_start', '2026-11-22T10:00:00.000Z', 0, 0, 0 FROM c`,
  );
  let secondDone = false;
  const second = store.insertEvent(ev('acme', 2)).then((e) => {
    secondDone = true;
    return e;
  });
  await sleep(300);
  assert.equal(secondDone, false, 'the second writer waits for the first to commit');
  assert.deepEqual(await store.eventsAfter('acme', 0, {}, 10), [], 'a reader sees neither yet');
  await c1.query('COMMIT');
  const e2 = await second;
  assert.equal(e2.id, 2);
  assert.deepEqual((await store.eventsAfter('acme', 0, {}, 10)).map((e) => e.id), [1, 2]);

  // A rolled-back id is taken again by the next writer: no permanent hole either.
  await c1.query('BEGIN');
  await c1.query('UPDATE event_counter SET last_id = last_id + 1');
  const third = store.insertEvent(ev('acme', 3));
  await sleep(100);
  await c1.query('ROLLBACK');
  assert.equal((await third).id, 3);
});

test('12 concurrent writers on 4 pools against a polling reader: nothing is ever skipped', async (t) => {
  const url = await server.createDatabase('race');
  const writers = await Promise.all(Array.from({ length: 4 }, () => PgStore.open(url, { max: 3 })));
  const reader = await PgStore.open(url, { max: 1 });
  t.after(() => Promise.all([...writers, reader].map((s) => s.close())));

  const customers = ['acme', 'globex'];
  const written = new Map<string, Set<number>>(customers.map((c) => [c, new Set()]));
  const perLoop = 60;
  let writing = true;
  let rolledBack = 0;

  const loop = async (store: PgStore, n: number) => {
    for (let i = 0; i < perLoop; i++) {
      const customer = customers[(i + n) % 2];
      const kind = (i + n) % 5;
      if (kind === 0) {
        // A batch under one hold of the counter.
        const got = await store.insertEvents([ev(customer, i), ev(customer, i + 1), ev(customer, i + 2)]);
        assert.deepEqual(got.map((e) => e.id - got[0].id), [0, 1, 2], 'a batch gets consecutive ids');
        for (const e of got) written.get(customer)!.add(e.id);
      } else if (kind === 1) {
        // A transaction that takes an id, holds it a moment, then rolls back.
        await store
          .transaction(async (tx) => {
            await tx.insertEvent(ev(customer, i));
            await sleep(2);
            throw new Error('roll back');
          })
          .catch((err: Error) => {
            if (err.message !== 'roll back') throw err;
            rolledBack++;
          });
      } else if (kind === 2) {
        // A transaction that holds its id a moment before committing (the slow committer).
        const e = await store.transaction(async (tx) => {
          const e = await tx.insertEvent(ev(customer, i));
          await sleep(3);
          return e;
        });
        written.get(customer)!.add(e.id);
      } else {
        written.get(customer)!.add((await store.insertEvent(ev(customer, i))).id);
      }
    }
  };

  const seen = new Map<string, number[]>(customers.map((c) => [c, []]));
  let polls = 0;
  const read = async () => {
    const last = new Map<string, number>(customers.map((c) => [c, 0]));
    for (let round = 0; round < 100_000; round++) {
      const done = !writing;
      for (const c of customers) {
        const batch = await reader.eventsAfter(c, last.get(c)!, {}, 50);
        polls++;
        for (const e of batch) {
          assert.ok(e.id > last.get(c)!, `ids increase (${e.id} after ${last.get(c)})`);
          last.set(c, e.id);
          seen.get(c)!.push(e.id);
        }
      }
      // One more full pass after the writers finished, then stop.
      if (done) {
        const more = await Promise.all(customers.map((c) => reader.eventsAfter(c, last.get(c)!, {}, 1)));
        if (more.every((m) => m.length === 0)) return;
      }
    }
    throw new Error('reader did not finish');
  };

  const reading = read();
  await Promise.all(writers.flatMap((w, wi) => [0, 1, 2].map((k) => loop(w, wi * 3 + k))));
  writing = false;
  await reading;

  let total = 0;
  for (const c of customers) {
    const all = (await reader.eventsAfter(c, 0, {}, 100_000)).map((e) => e.id);
    const expected = [...written.get(c)!].sort((x, y) => x - y);
    assert.deepEqual(all, expected, `${c}: the log holds exactly what was acknowledged`);
    assert.deepEqual(seen.get(c), expected, `${c}: the polling reader saw every event, each once, in order`);
    total += expected.length;
  }
  // Every id of the counter is either stored or was taken again after a rollback: no hole.
  const ids = [...written.get('acme')!, ...written.get('globex')!].sort((x, y) => x - y);
  assert.deepEqual(ids, ids.map((_, i) => i + 1));
  assert.ok(rolledBack > 0 && polls > 20, `the run exercised rollbacks (${rolledBack}) and polling (${polls})`);
  t.diagnostic(`${total} events from 12 writers, ${rolledBack} rolled back, ${polls} polls`);
});

test('the feed: a subscriber on one instance gets every instance\'s events once, in order, woken by NOTIFY', async (t) => {
  const url = await server.createDatabase('feed');
  const instances = await Promise.all(
    [0, 1].map(async () => {
      const store = await PgStore.open(url, { max: 4 });
      const listener = new PgListener(url, Object.values(CHANNELS));
      await listener.ready;
      // No safety poll within the test's time: delivery must come from the notifications.
      const feed = new PgEventFeed(store, listener, { pollMs: 600_000, batch: 7 });
      return { store, listener, feed };
    }),
  );
  t.after(async () => {
    for (const i of instances) {
      await i.feed.close();
      await i.listener.close();
      await i.store.close();
    }
  });
  const [a, b] = instances;

  // Events from before the subscription: replayed from afterId on.
  for (let i = 0; i < 5; i++) await a.feed.publish({ customerId: 'acme', sessionId: 's-1', type: 'session_start', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0 });

  const all: SessionEvent[] = [];
  const ends: SessionEvent[] = [];
  const late: SessionEvent[] = [];
  const other: SessionEvent[] = [];
  b.feed.subscribe({ customerId: 'acme', filter: {}, afterId: 0, deliver: (e) => all.push(e) });
  b.feed.subscribe({ customerId: 'acme', filter: { types: ['session_end'] }, afterId: 0, deliver: (e) => ends.push(e) });
  b.feed.subscribe({ customerId: 'acme', filter: {}, afterId: 3, deliver: (e) => late.push(e) });
  a.feed.subscribe({ customerId: 'globex', filter: {}, afterId: 0, deliver: (e) => other.push(e) });

  const published: SessionEvent[] = [];
  await Promise.all(
    [a, b, a, b].map(async (inst, w) => {
      for (let i = 0; i < 40; i++) {
        const type = i % 10 === 9 ? 'session_end' : 'session_heartbeat';
        published.push(await inst.feed.publish({ customerId: w === 3 && i % 4 === 0 ? 'globex' : 'acme', sessionId: `s-${w}`, type, duration: i, uploaded_bytes: i, downloaded_bytes: i }));
      }
    }),
  );
  const acmeIds = (await a.store.eventsAfter('acme', 0, {}, 1000)).map((e) => e.id);
  const globexIds = (await a.store.eventsAfter('globex', 0, {}, 1000)).map((e) => e.id);
  await waitFor(() => all.length >= acmeIds.length && other.length >= globexIds.length, 10_000, 'delivery by notification');
  await sleep(100);
  await b.feed.idle();

  assert.deepEqual(all.map((e) => e.id), acmeIds, 'every event of the customer, once, in increasing id order');
  assert.deepEqual(late.map((e) => e.id), acmeIds.filter((id) => id > 3));
  assert.deepEqual(ends.map((e) => e.event_type), Array(ends.length).fill('session_end'));
  assert.equal(ends.length, published.filter((e) => e.event_type === 'session_end' && acmeIds.includes(e.id)).length);
  assert.deepEqual(other.map((e) => e.id), globexIds, 'the other tenant, on the other instance, apart');
  assert.equal(acmeIds.length + globexIds.length, 165);
  // What the subscriber got is what the publisher was told, field for field.
  const byId = new Map(published.map((e) => [e.id, e]));
  for (const e of all.slice(5)) assert.deepEqual(e, byId.get(e.id));
});
