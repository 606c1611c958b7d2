// PostgreSQL's cache of getCached reads (server/store/pg/read-cache.ts), on a real server with two
// "instances" (two PgStores on one database, as two `serve` processes): a write committed on one
// reaches the other's cached reads through the vad_reads notification; reads while the LISTEN
// connection is down go to the database and the cache starts empty when it is back; an
// invalidation during a read's round trip keeps its answer out of the cache; an instance's own
// writes show at once in its own reads; and every table a cached read reads has the trigger.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PgListener } from '../../server/store/pg/listener.ts';
import { CHANNELS, PgStore } from '../../server/store/pg/store.ts';
import { INSERT_SILENT, READ_TABLES } from '../../server/store/sql/channels.ts';
import { readTables } from '../../server/store/sql/read-cache.ts';
import { getCached } from '../../server/store/sql/op.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';

let server: PgServer;
let dbs = 0;
before(async () => {
  server = await startPostgres();
});
after(() => server.destroy());

interface Instance {
  store: PgStore;
  listener: PgListener;
  app: string;
}

/** A fresh database, a writing instance B (no cache of its own followed) and instance A whose cache follows its listener. */
async function cluster(channels: string[] = Object.values(CHANNELS), minBackoffMs = 100): Promise<{ a: Instance; b: PgStore; customer: string }> {
  const url = await server.createDatabase(`rc${++dbs}`);
  const b = await PgStore.open(url);
  const store = await PgStore.open(url);
  const app = `vad-test-listen-${dbs}`;
  const listener = new PgListener(url, channels, { applicationName: app, minBackoffMs, maxBackoffMs: minBackoffMs });
  await listener.ready;
  const stop = store.reads.follow(listener);
  server.onDestroy(async () => {
    stop();
    await listener.close();
    await store.close();
    await b.close();
  });
  const customer = (await b.ensureCustomer('acme')).id;
  return { a: { store, listener, app }, b, customer };
}

/** Resolves once A's listener has received the vad_reads notification of `table`. */
function notified(a: Instance, table: string): Promise<void> {
  return new Promise((resolve) => {
    const off = a.listener.onNotification((channel, payload) => {
      if (channel !== CHANNELS.reads || payload !== table) return;
      off();
      resolve();
    });
  });
}

/** Reads until `ok` holds, within 5 s (the notification normally arrives within a millisecond). */
async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(v)} after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const sessionOf = (customer: string, id: string) => ({ id, customer_id: customer, client_id: 'k', zone: 'de-fra', reusable: true, created_at: new Date().toISOString() });
const SID = 'f0e1d2c3-0000-4000-8000-00000000c0c1';

test("a write on another instance reaches this instance's cached reads once its notification has arrived", async () => {
  const { a, b, customer } = await cluster();
  await b.insertSession(sessionOf(customer, SID)); // an INSERT into sessions notifies nothing (INSERT_SILENT)
  const status = () => a.store.getSessionStatusOf(customer, SID);
  const first = (await status())!;
  assert.deepEqual([first.limits, first.control, first.row.paused], [{}, undefined, false]);
  assert.equal(a.store.reads.cache.count, 1, 'the status read is cached');
  assert.deepEqual(await status(), first, 'answered again alike (from the cache)');

  await b.patchLimits(customer, 'global', { max_sessions: 3 });
  await until('limits on A', status, (s) => s?.limits.global?.max_sessions === 3);
  await b.patchClient(customer, 'k', { disabled: true });
  await until("the client's record on A", status, (s) => s?.control?.disabled === true);
  await b.setPaused(SID, true);
  const paused = await until('the pause on A', status, (s) => s?.row.paused === true);
  assert.deepEqual([paused?.limits.global, paused?.control?.disabled], [{ max_sessions: 3 }, true]);

  // A creation's checks (clients and limits) and the single-table reads follow too.
  assert.equal((await a.store.getClientAndLimits(customer, 'k')).client?.disabled, true);
  assert.equal((await a.store.getClient(customer, 'k'))?.disabled, true);
  await b.patchClientLimits(customer, 'k', { max_sessions: 1 });
  await b.patchLimits(customer, 'session', { default_lifetime_seconds: 60 });
  await until('a creation read on A', () => a.store.getClientAndLimits(customer, 'k'), (r) => r.client?.override?.fields.max_sessions === 1 && r.limits.session?.default_lifetime_seconds === 60);
  await until('getClient on A', () => a.store.getClient(customer, 'k'), (c) => c?.override?.fields.max_sessions === 1);
  await until('getLimits on A', () => a.store.getLimits(customer, 'session'), (l) => l?.default_lifetime_seconds === 60);
  await b.deleteLimits(customer, 'global');
  await until('a deletion on A', () => a.store.getAllLimits(customer), (l) => l.global === undefined);
});

test('read after write across instances: the read right after another instance acknowledged a write sees it, however late the notification (the fence)', async () => {
  // A's own listener hears no vad_reads; the one its cache follows gets everything 40 ms late,
  // so only the fence (whose answer comes after the notifications on the same connection) can
  // keep A from answering the row it cached before B's write.
  const { a, b, customer } = await cluster([CHANNELS.tokens]);
  const net = await relay(server.port, 40);
  const url = new URL(a.store.pool.options.connectionString!);
  url.port = String(net.port);
  const listener = new PgListener(url.toString(), Object.values(CHANNELS));
  await listener.ready;
  const stop = a.store.reads.follow(listener);
  try {
    await b.insertSession(sessionOf(customer, SID));
    const status = () => a.store.getSessionStatusOf(customer, SID);
    let unannounced = 0;
    for (let i = 1; i <= 20; i++) {
      await status();
      await status(); // the second one from the cache
      const cached = a.store.reads.cache.count;
      await b.setPaused(SID, i % 2 === 1);
      await b.patchLimits(customer, 'global', { max_sessions: i });
      if (a.store.reads.cache.count === cached) unannounced++;
      const s = (await status())!;
      assert.equal(s.row.paused, i % 2 === 1, `round ${i}: the pause`);
      assert.equal(s.limits.global?.max_sessions, i, `round ${i}: the limits`);
    }
    assert.ok(unannounced > 0, 'the writes were acknowledged before A heard of them (else this proves nothing)');
    // Reads asked for at once share fences (the first may begin before the last read asks).
    await status();
    const fences = listener.fences;
    const many = await Promise.all(Array.from({ length: 50 }, () => status()));
    assert.ok(many.every((s) => s?.limits.global?.max_sessions === 20));
    assert.ok(listener.fences - fences <= 2, `50 reads at once, ${listener.fences - fences} fences`);
  } finally {
    stop();
    await listener.close();
    net.close();
  }
});

test('while the LISTEN connection is down reads go to the database, and the cache starts empty when it is back', async () => {
  const { a, b, customer } = await cluster(Object.values(CHANNELS), 3_000);
  const seen = notified(a, 'limits');
  await b.patchLimits(customer, 'global', { max_sessions: 1 });
  await seen;
  assert.equal((await a.store.getAllLimits(customer)).global?.max_sessions, 1);
  assert.equal(a.store.reads.cache.count, 1);

  // The listener's connection is cut by the server: it reconnects after 3 s.
  await b.pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [a.app]);
  await until('the listener down', async () => a.listener.connected, (up) => !up);
  await b.patchLimits(customer, 'global', { max_sessions: 2 }); // its notification never reaches A
  assert.equal((await a.store.getAllLimits(customer)).global?.max_sessions, 2, 'read from the database, not the cached 1');
  assert.equal((await a.store.getClientAndLimits(customer, 'k')).limits.global?.max_sessions, 2);
  assert.equal(a.listener.connected, false, 'still down while those reads ran');
  assert.equal(a.store.reads.live, false);
  assert.equal(a.store.reads.cache.count, 1, 'nothing stored while down (the old entry waits for the reconnection)');

  await until('the listener back', async () => a.listener.connected, (up) => up);
  assert.equal(a.store.reads.cache.count, 0, 'cleared on reconnection');
  assert.equal((await a.store.getAllLimits(customer)).global?.max_sessions, 2, 'not the 1 cached before the outage');
  assert.equal(a.store.reads.cache.count, 1, 'cached again');
});

test('an invalidation between sending a read and receiving its answer keeps the answer out of the cache', async () => {
  const { a, b, customer } = await cluster();
  // The notifications of B's writes are in before the reads (none may land during one by chance).
  let seen = notified(a, 'limits');
  await b.patchLimits(customer, 'global', { max_sessions: 1 });
  await seen;
  const cache = a.store.reads.cache;
  // The pool hands the read its connection after the runner took the generation and before the
  // query is sent: a vad_reads notification of `limits` handled there is one that arrived during
  // the round trip (its row may predate the write it announces).
  const during = async (table: string) => {
    const hook = () => cache.invalidate(table);
    a.store.pool.once('acquire', hook);
    try {
      return (await a.store.getAllLimits(customer)).global?.max_sessions;
    } finally {
      a.store.pool.off('acquire', hook); // a hit acquires nothing
    }
  };
  assert.equal(await during('limits'), 1, 'answered from the database');
  assert.equal(cache.count, 0, 'not stored: limits were invalidated meanwhile');
  assert.equal(await during('*'), 1);
  assert.equal(cache.count, 0, 'not stored: everything was invalidated meanwhile');
  assert.equal(await during('clients'), 1);
  assert.equal(cache.count, 1, 'stored: only a table it does not read changed');
  // Within a status read's tables, any one of them keeps it out.
  await b.insertSession(sessionOf(customer, SID));
  a.store.pool.once('acquire', () => cache.invalidate('clients'));
  assert.equal((await a.store.getSessionStatusOf(customer, SID))?.row.id, SID);
  assert.equal(cache.count, 1, 'the status read (it reads clients) not stored; the limits read still cached');
  assert.equal(await during('sessions'), 1);
  assert.equal(cache.count, 1, 'a hit takes no round trip: nothing to keep out');
});

test('a read that found no session is not kept: a session created on another instance is found at once', async () => {
  const { a, b, customer } = await cluster();
  assert.equal(await a.store.getSessionStatusOf(customer, SID), undefined);
  assert.equal(await a.store.getSessionOf(customer, SID), undefined);
  assert.equal(a.store.reads.cache.count, 0, 'nothing kept: the INSERT that makes it will not be notified');
  await b.insertSession(sessionOf(customer, SID));
  assert.equal((await a.store.getSessionStatusOf(customer, SID))?.row.id, SID, 'found on the next read, no notification needed');
  assert.equal((await a.store.getSessionOf(customer, SID))?.id, SID);
  assert.equal(a.store.reads.cache.count, 2, 'kept once found');
});

test("an instance's own writes show at once in its own cached reads, without the notification", async () => {
  // A listens on another channel only: vad_reads never arrives, so only its own commits drop entries.
  const { a, b, customer } = await cluster([CHANNELS.events]);
  const store = a.store;
  assert.deepEqual(await store.getAllLimits(customer), {});
  await b.patchLimits(customer, 'global', { max_sessions: 9 });
  assert.deepEqual(await store.getAllLimits(customer), {}, 'without the notification another instance’s write is not seen (the cache answers)');

  await store.patchLimits(customer, 'global', { max_sessions: 5 });
  assert.equal((await store.getAllLimits(customer)).global?.max_sessions, 5, 'own write (a transaction) seen at once');
  await store.insertSession(sessionOf(customer, SID));
  assert.equal((await store.getSessionStatusOf(customer, SID))?.row.paused, false);
  await store.setPaused(SID, true); // one statement, no transaction
  assert.equal((await store.getSessionStatusOf(customer, SID))?.row.paused, true, 'own single statement seen at once');
  await store.patchClient(customer, 'k', { disabled: true });
  assert.equal((await store.getClientAndLimits(customer, 'k')).client?.disabled, true);

  // A caller-held transaction: its reads are its own (never the cache's), nothing stored, and
  // its writes are dropped from the cache at its commit.
  const before = store.reads.cache.count;
  await store.transaction(async (tx) => {
    await tx.patchLimits(customer, 'session', { max_sessions: 4 });
    assert.equal((await tx.getAllLimits(customer)).session?.max_sessions, 4, 'the transaction reads its own write');
    assert.equal(store.reads.cache.count, before, 'nothing cached inside a transaction');
    assert.equal((await store.getAllLimits(customer)).session, undefined, 'outside it, not yet committed');
  });
  assert.equal((await store.getAllLimits(customer)).session?.max_sessions, 4, 'seen once committed');
});

test('every table a cached read reads has the vad_reads trigger', async () => {
  const { a, b, customer } = await cluster();
  const triggered = await b.pool.query<{ t: string }>(
    `SELECT c.relname AS t FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_proc p ON p.oid = g.tgfoid
     WHERE p.proname = 'vad_notify_reads' ORDER BY 1`,
  );
  assert.deepEqual(triggered.rows.map((r) => r.t), [...READ_TABLES].sort());

  // Every getCached read of the repositories (a new one must be added here), run once: each is
  // cached, which the cache allows only when every table it reads is one of READ_TABLES.
  const dir = join(import.meta.dirname, '../../server/store/repos');
  const sites = readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').match(/\bgetCached\s*[<(]/g) ?? []);
  await b.insertSession(sessionOf(customer, SID));
  const s = a.store;
  const reads = [
    () => s.getSessionStatusOf(customer, SID),
    () => s.getClientAndLimits(customer, 'k'),
    () => s.getAllLimits(customer),
    () => s.getLimitsRecord(customer, 'global'),
    () => s.getLimits(customer, 'global'),
    () => s.getSessionOf(customer, SID),
    () => s.getClient(customer, 'k'),
  ];
  assert.equal(sites.length, reads.length, 'every getCached call site of server/store/repos is exercised here');
  for (const [i, read] of reads.entries()) {
    await read();
    assert.equal(s.reads.cache.count, i + 1, `cached read ${i} was cached`);
  }
  // INSERTs into sessions are not notified: every cached read of sessions must read one session
  // by its id (a new row cannot change what it found; what found nothing is not kept).
  const ofSessions = s.reads.cache.texts.filter((sql) => readTables(sql).some((t) => INSERT_SILENT.includes(t)));
  assert.equal(ofSessions.length, 2, 'the status read and getSessionOf');
  for (const sql of ofSessions) assert.match(sql, /\bWHERE\s+(?:\w+\.)?id = \?/, `a read of one session by id: ${sql}`);
  // A cached read of a table without the trigger is never cached (it could go stale).
  await s.runner.run(getCached('SELECT id FROM customers WHERE id = ?', customer));
  assert.equal(s.reads.cache.count, reads.length, 'a read of customers is not cached');
});

test("a session creation drops this instance's cached reads of sessions, not those of clients and limits", async () => {
  const { a, customer } = await cluster([CHANNELS.events]); // only its own writes drop entries
  const s = a.store;
  await s.patchLimits(customer, 'global', { max_sessions: 5 });
  await s.getClientAndLimits(customer, 'k');
  assert.equal(s.reads.cache.count, 1);
  await s.createSession(sessionOf(customer, SID), null, null);
  assert.equal(s.reads.cache.count, 1, "a creation's checks stay cached across creations");
  assert.equal((await s.getSessionStatusOf(customer, SID))?.row.id, SID);
  assert.equal(s.reads.cache.count, 2);
  await s.createSession(sessionOf(customer, 'f0e1d2c3-0000-4000-8000-00000000c0c2'), null, null);
  assert.equal(s.reads.cache.count, 1, 'the status read (of sessions) dropped by the insert into sessions');
});

/**
 * A TCP relay to the server that can go silent (a network cut: nothing passes, nothing is
 * closed); `lateMs` holds what the server sends for that long (in order) before passing it on.
 */
async function relay(port: number, lateMs = 0): Promise<{ port: number; cut(): void; close(): void }> {
  const sockets: Socket[] = [];
  let cut = false;
  const srv = createServer((inbound) => {
    const outbound = connect(port, '127.0.0.1');
    sockets.push(inbound, outbound);
    for (const [from, to] of [[inbound, outbound], [outbound, inbound]] as const) {
      const late = lateMs > 0 && from === outbound;
      from.on('data', (d) => cut || (late ? setTimeout(() => cut || to.write(d), lateMs) : to.write(d)));
      from.on('error', () => to.destroy());
      from.on('close', () => cut || to.end());
    }
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as { port: number }).port,
    cut: () => (cut = true),
    close: () => {
      srv.close();
      for (const s of sockets) s.destroy();
    },
  };
}

test('a LISTEN connection cut without a word is given up by its heartbeat: the cache stops answering', async () => {
  const { a, b, customer } = await cluster();
  // A's listener, this time through the relay to the same database.
  const net = await relay(server.port);
  const url = new URL(a.store.pool.options.connectionString!);
  url.port = String(net.port);
  // Given up after 3 unanswered heartbeats: 1.5 s, well past a busy machine's stalls (at 100 ms, a
  // 300 ms stall of a loaded CI machine gave it up before the cut), well within until's 5 s.
  const listener = new PgListener(url.toString(), Object.values(CHANNELS), { heartbeatMs: 500, minBackoffMs: 60_000, maxBackoffMs: 60_000 });
  await listener.ready;
  const stop = a.store.reads.follow(listener);
  try {
    const seen = notified({ ...a, listener }, 'limits');
    await b.patchLimits(customer, 'global', { max_sessions: 1 });
    await seen;
    assert.equal((await a.store.getAllLimits(customer)).global?.max_sessions, 1);
    assert.equal(a.store.reads.cache.count, 1, `the limits cached while the listener is ${listener.connected ? 'connected' : 'given up'}`);
    net.cut(); // B's next notification never arrives, and nothing tells the listener
    await b.patchLimits(customer, 'global', { max_sessions: 2 });
    await until('the silent listener given up', async () => listener.connected, (up) => !up);
    assert.equal((await a.store.getAllLimits(customer)).global?.max_sessions, 2, 'read from the database, not the cached 1');
  } finally {
    stop();
    await listener.close();
    net.close();
  }
});
