// The PostgreSQL store answers exactly like the SQLite store: one scenario of every operation
// runs on both (a real SQLite file, a real PostgreSQL server) and the two transcripts must be
// equal. Then what only several instances can do: races between pools, token changes seen by
// another instance (and by its token cache at once), nodes and session placement.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after as afterAll, before as beforeAll, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../server/store/db.ts';
import { PgListener } from '../../server/store/pg/listener.ts';
import { CHANNELS, PgStore } from '../../server/store/pg/store.ts';
import type { StoreOps } from '../../server/store/ops.ts';
import { PgTokenCache } from '../../server/plugins/pg-token-cache.ts';
import { Store } from '../../server/store/store.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

/** One server for the file (initdb is the slow part); each test takes its own database. */
let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server.destroy());

/** The operations both stores share, each either sync (SQLite) or Promise-returning (PostgreSQL). */
type Shared = Pick<Store, keyof StoreOps>;
type Either<T> = { [K in keyof T]: T[K] extends (...a: infer A) => infer R ? (...a: A) => R | Promise<R> : never };
type AnyStore = Either<Shared> & { tokenGeneration: number };

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g;
const TOKEN = /vad_[A-Za-z0-9_-]+/g;

/** Random ids, tokens and clock readings differ between runs; everything else must not. */
function normalise(v: unknown): unknown {
  if (v === undefined) return '<undefined>';
  return JSON.parse(JSON.stringify(v).replace(UUID, '<uuid>').replace(ISO, '<time>').replace(TOKEN, '<token>'));
}

async function scenario(s: AnyStore): Promise<unknown[]> {
  const log: unknown[] = [];
  const step = async (name: string, v: unknown) => log.push([name, normalise(await v)]);
  const T = '2026-11-22T10:00:00.000Z';

  await step('count0', s.countCustomers());
  const owner = await s.createToken('acme', 'owner');
  const agent = await s.createToken('acme', 'agent');
  const other = await s.createToken('globex', 'owner');
  await step('created', [owner.info, agent.info, other.info]);
  assert.ok(owner.token.startsWith(owner.info.prefix));
  await step('count3', s.countCustomers());
  await step('ensure existing', s.ensureCustomer('acme'));
  await step('ensure new', s.ensureCustomer('initech'));
  await step('find owner', s.findToken(owner.token));
  await step('find garbage', s.findToken('vad_nope'));
  await step('list tokens', s.listTokens());
  const gen = s.tokenGeneration;
  await step('revoke by prefix', s.revokeToken(agent.info.prefix));
  assert.equal(s.tokenGeneration, gen + 1);
  await step('find revoked', s.findToken(agent.token));
  await step('revoke again', s.revokeToken(agent.info.id));
  await step('revoke by token', s.revokeToken(other.token));
  await step('revoke unknown', s.revokeToken('nothing'));

  const acme = owner.info.customer_id;
  const globex = other.info.customer_id;
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) {
    const id = randomUUID();
    ids.push(id);
    await step(`insert ${i}`, s.insertSession({ id, customer_id: i === 6 ? globex : acme, client_id: `c-${i % 3}`, zone: i % 2 ? 'de-fra' : 'jp-tyo', reusable: i % 2 === 0, created_at: T }));
  }
  await step('get', s.getSession(ids[1]));
  await step('get missing', s.getSession(randomUUID()));
  await step('get of owner', s.getSessionOf(acme, ids[2]));
  await step('get of other tenant', s.getSessionOf(globex, ids[2]));
  const page1 = await s.listSessions(acme, {}, 4);
  await step('page 1', page1);
  await step('page 2', s.listSessions(acme, {}, 4, page1.nextSeq!));
  await step('by client', s.listSessions(acme, { client_id: 'c-1' }, 10));
  await step('by zone', s.listSessions(acme, { zone: 'de-fra' }, 10));
  await s.setPaused(ids[0], true);
  await s.saveRuntime(ids[0], { status: 'active', uploaded_bytes: 5_000_000_000, downloaded_bytes: 7, duration: 3, connections: 2 });
  await s.saveRuntime(ids[1], { downloaded_bytes: 11 });
  await s.saveRuntime(ids[3], {});
  await step('after runtime', s.getSession(ids[0]));
  await step('by status', s.listSessions(acme, { status: 'active' }, 10));
  await step('sum customer', s.sumCounters(acme));
  await step('sum client', s.sumCounters(acme, 'c-0'));
  await step('sum nobody', s.sumCounters(acme, 'nobody'));
  await s.setPaused(ids[0], false);
  await step('resumed', s.getSession(ids[0]));

  await step('no limits', s.getLimitsRecord(acme, 'client'));
  await step('no limit values', s.getLimits(acme, 'client'));
  await step('patch create', s.patchLimits(acme, 'client', { max_sessions: 3, downloaded_bytes: 1000 }));
  await step('patch merge', s.patchLimits(acme, 'client', { max_sessions: null, upload_speed: 10 }));
  await step('limits', s.getLimits(acme, 'client'));
  await step('record', s.getLimitsRecord(acme, 'client'));
  await step('other scope', s.getLimits(acme, 'global'));
  await step('delete', s.deleteLimits(acme, 'client'));
  await step('delete again', s.deleteLimits(acme, 'client'));

  const types = ['session_start', 'session_heartbeat', 'session_stats', 'session_end'] as const;
  for (let i = 0; i < 10; i++) {
    await step(
      `event ${i}`,
      s.insertEvent({
        customer_id: i === 9 ? globex : acme,
        session_id: ids[i % 3],
        event_type: types[i % 4],
        created_at: i < 4 ? '2026-01-01T00:00:00.000Z' : T,
        duration: i,
        downloaded_bytes: i * 10,
        uploaded_bytes: i * 100,
      }),
    );
  }
  await step('after 0', s.eventsAfter(acme, 0, {}, 100));
  await step('after 3 limit 2', s.eventsAfter(acme, 3, {}, 2));
  await step('by session', s.eventsAfter(acme, 0, { sessionIds: [ids[1], ids[2]] }, 100));
  await step('by type', s.eventsAfter(acme, 0, { types: ['session_end', 'session_start'] }, 100));
  await step('other tenant', s.eventsAfter(globex, 0, {}, 100));
  await step('tail 3', s.idBeforeNewest(acme, {}, 3));
  await step('tail 2 filtered', s.idBeforeNewest(acme, { types: ['session_start'] }, 1));
  await step('tail too many', s.idBeforeNewest(acme, {}, 100));
  await step('prune', s.pruneEvents('2026-06-01T00:00:00.000Z'));
  await step('after prune', s.eventsAfter(acme, 0, {}, 100));

  // Nodes' listener facts (geo relay, TLS) and byte grants with their releases.
  const { node } = await s.addNode({ name: 'sao-1', zone: 'br-sao', public_host: 'sao-1.example.net' });
  const nodeFacts = async () => {
    const n = await s.getNode(node.id);
    return n && { tls: n.tls, tls_pcs: n.tls_pcs, up: n.up, clock_skew_ms: n.clock_skew_ms };
  };
  await step('node before', nodeFacts());
  await step('relays before contact', s.relayNodes());
  await s.touchNode(node.id, { vless_ws_port: 8787 });
  await s.setNodeFacts(node.id, { relay_port: 8790, relay_pcs: 'ab'.repeat(32), tls: true, tls_pcs: 'cd'.repeat(32), clock_skew_ms: -3_000 });
  await step('node after', nodeFacts());
  await step('relays', (await s.relayNodes()).map(({ token_hash: _h, id: _i, ...r }) => r));
  const want = { up: 1 << 20, down: 8 << 20 };
  const cap = { up: null, down: 64 << 20 };
  const granted = await s.grantBytes(node.id, acme, 'c-0', { cap, base: null, want });
  assert.deepEqual([granted.left.down, granted.gen], [8 << 20, 0]);
  await step('grant', granted);
  assert.equal(await s.releaseGrant(node.id, acme, 'c-0', 5), false, 'another generation: nothing released');
  assert.equal(await s.releaseGrant(node.id, acme, 'c-0', 0), true);
  assert.equal(await s.releaseGrant(node.id, acme, 'c-0', 0), false, 'the generation moved on');
  const kept = await s.grantBytes(node.id, acme, 'c-0', { cap, base: null, want: { up: 1 << 20, down: 1 << 20 } });
  assert.deepEqual([kept.left.down, kept.gen], [1 << 20, 1], 'KEEP_IDLE kept, in the next generation');
  await step('after release', kept);
  assert.equal(await s.releaseGrant(node.id, acme, 'nobody', 0), false);

  // Crash repair: a node's process named by its boot id; a new one repairs the sessions the
  // previous one carried (active ones go idle or end, with their events), once.
  await s.placeSession(ids[0], node.id);
  await s.placeSession(ids[1], node.id);
  await s.saveRuntime(ids[1], { status: 'active' });
  await step('hello first', s.nodeHello(node.id, 'boot-1'));
  await step('repair first', s.repairRestartedNode(node.id, 'boot-1', Date.now()));
  await step('repaired', [(await s.getSession(ids[0]))?.status, (await s.getSession(ids[1]))?.status]);
  await step('hello same', s.nodeHello(node.id, 'boot-1'));
  await step('repair again', s.repairRestartedNode(node.id, 'boot-1', Date.now()));
  await step('hello other', s.nodeHello(node.id, 'boot-2'));
  await step('silent: none', s.repairSilentNodes());
  await step('moved from: none', s.sessionsMovedFrom(node.id));
  return log;
}

test('the PostgreSQL store gives the same answers as the SQLite store', async (t) => {
  const dir = tempDir('vad-parity-');
  t.after(() => removeDir(dir));
  const sqlite = new Store(openDatabase(join(dir, 'data')));
  const expected = await scenario(sqlite);
  sqlite.db.close();

  const pgStore = await PgStore.open(await server.createDatabase('parity'));
  t.after(() => pgStore.close());
  const actual = await scenario(pgStore);
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) assert.deepEqual(actual[i], expected[i], `step ${(expected[i] as [string])[0]}`);
});

test('several instances: races, token versions, nodes and placement', async (t) => {
  const url = await server.createDatabase('instances');
  const a = await PgStore.open(url, { max: 5 });
  const b = await PgStore.open(url, { max: 5 });
  t.after(() => Promise.all([a.close(), b.close()]));

  // Two instances meeting a new customer at once create one row.
  const ensured = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).ensureCustomer('racer')));
  assert.equal(new Set(ensured.map((e) => e.id)).size, 1);
  assert.equal(ensured.filter((e) => e.created).length, 1);

  // Concurrent limit patches from two instances: every field lands, none overwrites another.
  const fields = ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed', 'max_sessions', 'max_reconnections'];
  await Promise.all(fields.map((f, i) => (i % 2 ? a : b).patchLimits(ensured[0].id, 'global', { [f]: i + 1 })));
  assert.deepEqual(await a.getLimits(ensured[0].id, 'global'), Object.fromEntries(fields.map((f, i) => [f, i + 1])));

  // A token made or revoked on one instance is seen by the other's version check.
  const v0 = await b.dataVersion();
  const made = await a.createToken('racer', 'agent');
  const v1 = await b.dataVersion();
  assert.ok(v1 > v0);
  assert.equal((await b.findToken(made.token))?.id, made.info.id);
  await a.revokeToken(made.info.id);
  assert.ok((await b.dataVersion()) > v1);
  assert.equal(await b.findToken(made.token), undefined);

  // Nodes: token hashed, not an API token; up by the database clock; placement follows load.
  const n1 = await a.addNode({ name: 'fra-1', zone: 'de-fra', public_host: 'fra1.example.net', vless_ws_port: 8443 });
  const n2 = await a.addNode({ name: 'fra-2', zone: 'de-fra', public_host: 'fra2.example.net' });
  assert.match(n1.token, /^vadn_/);
  assert.equal(n1.node.up, false);
  assert.equal(n1.node.last_contact, null);
  assert.equal(await b.findToken(n1.token), undefined, 'a node token is no API token');
  assert.equal(await b.findNodeByToken(made.token), undefined, 'an API token is no node token');
  assert.equal((await b.findNodeByToken(n1.token))?.name, 'fra-1');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.after(() => c.end());
  const stored = (await c.query('SELECT token_hash FROM nodes WHERE id = $1', [n1.node.id])).rows[0].token_hash as string;
  assert.ok(!stored.includes(n1.token.slice(5)), 'only the hash is stored');
  await assert.rejects(a.addNode({ name: 'fra-1', zone: 'de-fra', public_host: 'x' }), /duplicate key/);

  assert.deepEqual(await b.upNodes('de-fra'), []);
  assert.ok(await b.touchNode(n1.node.id, { vless_tcp_port: 9443, proxy_port: null }));
  assert.ok(await a.touchNode(n2.node.id));
  assert.equal(await a.touchNode(randomUUID()), false);
  const fra1 = (await a.getNodeByName('fra-1'))!;
  assert.equal(fra1.up, true);
  assert.match(fra1.last_contact!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.deepEqual([fra1.vless_ws_port, fra1.vless_tcp_port, fra1.proxy_port], [8443, 9443, null]);

  const cust = ensured[0].id;
  const s1 = await a.insertSession({ id: randomUUID(), customer_id: cust, client_id: 'c', zone: 'de-fra', reusable: true, created_at: '2026-11-22T10:00:00.000Z' });
  const s2 = await a.insertSession({ id: randomUUID(), customer_id: cust, client_id: 'c', zone: 'de-fra', reusable: true, created_at: '2026-11-22T10:00:00.000Z' });
  const first = (await b.upNodes('de-fra'))[0];
  assert.equal(first.name, 'fra-1', 'equal load: by name');
  await b.placeSession(s1.id, first.id);
  assert.equal((await b.upNodes('de-fra'))[0].name, 'fra-2', 'the least loaded node comes first');
  await b.placeSession(s2.id, n2.node.id);
  assert.equal(await a.placementOf(s1.id), n1.node.id);
  assert.deepEqual((await a.sessionsOnNode(n2.node.id)).map((s) => s.id), [s2.id]);

  // Out of contact for more than 10 s: down, and the zone has no up node left but fra-2.
  await c.query("UPDATE nodes SET last_contact = now() - interval '11 seconds' WHERE id = $1", [n1.node.id]);
  assert.deepEqual((await b.upNodes('de-fra')).map((n) => n.name), ['fra-2']);
  assert.deepEqual((await b.listNodes()).map((n) => [n.name, n.up]), [['fra-1', false], ['fra-2', true]]);

  // Silent for 15 s: the instances sweeping at once repair its active session once, and move it
  // to the zone's up node.
  await a.saveRuntime(s1.id, { status: 'active' });
  await c.query("UPDATE nodes SET last_contact = now() - interval '16 seconds' WHERE id = $1", [n1.node.id]);
  const swept = [...(await Promise.all([a.repairSilentNodes(), b.repairSilentNodes(), a.repairSilentNodes()])).flat(), ...(await b.repairSilentNodes())];
  assert.deepEqual(swept.map((e) => [e.event.session_id, e.event.event_type]), [[s1.id, 'session_stats'], [s1.id, 'session_end']]);
  assert.equal((await b.getSession(s1.id))?.status, 'idle');
  assert.equal(await b.placementOf(s1.id), n2.node.id, 'moved to fra-2');
  assert.deepEqual((await a.sessionsMovedFrom(n1.node.id)).map((s) => s.id), [s1.id], 'fra-1\'s late reports still count');
  await b.placeSession(s1.id, n1.node.id);
  assert.deepEqual(await a.sessionsMovedFrom(n1.node.id), []);

  // Removal moves the node's sessions to an up node of its zone; without one, the placements go.
  assert.equal((await a.removeNode('fra-1'))?.id, n1.node.id);
  assert.equal(await a.removeNode('fra-1'), undefined);
  assert.equal(await b.placementOf(s1.id), n2.node.id, 'moved to fra-2, up in the same zone');
  assert.equal(await b.findNodeByToken(n1.token), undefined);
  await c.query("UPDATE nodes SET last_contact = now() - interval '11 seconds' WHERE id = $1", [n2.node.id]);
  assert.equal((await a.removeNode('fra-2'))?.id, n2.node.id);
  assert.equal(await b.placementOf(s1.id), undefined);
  assert.equal((await b.getSession(s1.id))?.id, s1.id, 'the session itself stays');

  // A grant given back is announced to every instance: a node holding a final grant of the same
  // client hears of what it may have now from its channel's next state, sent at once.
  const listener = new PgListener(url, [CHANNELS.grants]);
  await listener.ready;
  t.after(() => listener.close());
  const heard: string[] = [];
  listener.onNotification((channel, payload) => heard.push(`${channel} ${payload}`));
  const n3 = (await a.addNode({ name: 'fra-3', zone: 'de-fra', public_host: 'fra3.example.net' })).node;
  const grant = await a.grantBytes(n3.id, cust, 'c', { cap: { up: null, down: 64 << 20 }, base: null, want: { up: 1 << 20, down: 8 << 20 } });
  assert.equal(await b.releaseGrant(n3.id, cust, 'c', grant.gen + 1), false);
  assert.equal(await b.releaseGrant(n3.id, cust, 'c', grant.gen), true);
  const until = Date.now() + 5000;
  while (!heard.length && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(heard, [`${CHANNELS.grants} ${cust}`], 'one notice, for the release only (not the top-up, nor a release of another generation)');
});

test('token caches: a revocation on one instance reaches the other\'s cache by notification, or by version check without one', async (t) => {
  const url = await server.createDatabase('token_cache');
  const a = await PgStore.open(url, { max: 2 });
  const b = await PgStore.open(url, { max: 2 });
  const listener = new PgListener(url, [CHANNELS.tokens]);
  await listener.ready;
  // A minute of TTL: whatever drops an entry here is the invalidation, not its age.
  const notified = new PgTokenCache(b, listener, 60_000);
  const polling = new PgTokenCache(b, null, 60_000, 10_000, 0);
  t.after(async () => {
    notified.close();
    await listener.close();
    await Promise.all([a.close(), b.close()]);
  });

  const { token, info } = await a.createToken('acme', 'agent');
  assert.equal((await notified.find(token))?.id, info.id);
  assert.equal((await polling.find(token))?.id, info.id);
  // Cached: the row can change under it without a notification and the hit stays.
  assert.equal((await notified.find(token))?.id, info.id);

  await a.revokeToken(info.id);
  assert.equal(await polling.find(token), undefined, 'the version check sees the revocation at once');
  const deadline = Date.now() + 5000;
  while ((await notified.find(token)) !== undefined) {
    assert.ok(Date.now() < deadline, 'the notification did not drop the cached token');
    await new Promise((r) => setTimeout(r, 10));
  }
  // A token made afterwards on the other instance is found at once.
  const fresh = await a.createToken('acme', 'owner');
  assert.equal((await polling.find(fresh.token))?.id, fresh.info.id);
  assert.equal((await notified.find(fresh.token))?.id, fresh.info.id);
});
