// Crash repair on both databases: a node's process named by its boot id (a new one repairs what
// the previous one carried, once; claims before it are released), silent nodes swept (once,
// however many sweep at a time; sessions moved to the zone's up node), a node detached, and the
// sessions an instance's own data plane carried when its process died, or a SQLite server left active.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { RepairedEvent } from '../../server/store/repos/repair.ts';
import { grantOps } from '../../server/store/repos/grants.ts';
import { nodeOps } from '../../server/store/repos/nodes.ts';
import { placementOps } from '../../server/store/repos/placements.ts';
import { repairOps } from '../../server/store/repos/repair.ts';
import { contactAgo, countRows, customer, MiB, session, sessionState } from '../helpers/cluster-rows.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';

async function node(db: DialectDb, name: string, zone = 'de-fra'): Promise<{ id: string; token: string }> {
  const { node: n, token } = await db.run(nodeOps.addNode({ name, zone, public_host: `${name}.example.net` }));
  await db.run(nodeOps.touchNode(n.id));
  return { id: n.id, token };
}

const pairs = (events: RepairedEvent[] | false) => (events === false ? false : events.map((e) => [e.event.session_id, e.event.event_type]));

eachDialect('restart: a new boot id repairs what the previous process carried, once; claims before it are released', async (db) => {
  const c = await customer(db);
  const n1 = (await node(db, 'fra-1')).id;
  const reusable = await session(db, c, { status: 'active', uploaded_bytes: 5, downloaded_bytes: 6, duration: 7 });
  const oneShot = await session(db, c, { status: 'active', reusable: false });
  const oldClaim = await session(db, c, { status: 'idle', claimed_at: Date.now() - 60_000 });
  const newClaim = await session(db, c, { claimed_at: Date.now() + 60_000 });
  const elsewhere = await session(db, c, { status: 'active' });
  for (const s of [reusable, oneShot, oldClaim, newClaim]) await db.run(placementOps.placeSession(s, n1));

  assert.equal(await db.run(repairOps.nodeHello(n1, 'boot-1')), 'new');
  const repaired = await db.run(repairOps.repairRestartedNode(n1, 'boot-1', Date.now()));
  assert.ok(repaired);
  assert.deepEqual(repaired.map((e) => [e.customerId, e.event.session_id, e.event.event_type, e.event.uploaded_bytes, e.event.downloaded_bytes, e.event.duration]), [
    [c, reusable, 'session_stats', 5, 6, 7],
    [c, reusable, 'session_end', 5, 6, 7],
    [c, oneShot, 'session_stats', 0, 0, 0],
    [c, oneShot, 'session_end', 0, 0, 0],
  ]);
  assert.ok(repaired[1].event.id > repaired[0].event.id);
  assert.deepEqual(
    await Promise.all([reusable, oneShot, oldClaim, newClaim, elsewhere].map(async (s) => [(await sessionState(db, s)).status, (await sessionState(db, s)).claimed])),
    [['idle', false], ['ended', false], ['idle', false], ['created', true], ['active', false]],
  );
  assert.equal(await countRows(db, 'events'), 4);

  // The same process again: a reconnection, nothing to repair.
  assert.equal(await db.run(repairOps.nodeHello(n1, 'boot-1')), 'same');
  assert.equal(await db.run(repairOps.repairRestartedNode(n1, 'boot-1', Date.now())), false);
  assert.equal(await db.run(repairOps.nodeHello(n1, 'boot-2')), 'new');
  assert.deepEqual(await db.run(repairOps.repairRestartedNode(n1, 'boot-2', Date.now())), [], 'nothing active left');
  assert.equal(await db.run(repairOps.nodeHello(randomUUID(), 'boot-1')), 'new', 'no such node');
  assert.equal(await db.run(repairOps.repairRestartedNode(randomUUID(), 'boot-1', Date.now())), false);
});

eachDialect("silent nodes: repaired once however many sweep, moved to the zone's up node, the hello after it", async (db) => {
  const c = await customer(db);
  const n1 = (await node(db, 'fra-1')).id;
  const n2 = (await node(db, 'fra-2')).id;
  const n3 = (await node(db, 'fra-3')).id;
  await db.run(repairOps.repairRestartedNode(n1, 'boot-1', Date.now()));
  const active = await session(db, c, { status: 'active' });
  const idle = await session(db, c, { status: 'idle' });
  const ended = await session(db, c, { status: 'ended' });
  const onN3 = await session(db, c);
  for (const s of [active, idle, ended]) await db.run(placementOps.placeSession(s, n1));
  await db.run(placementOps.placeSession(onN3, n3));

  // Out of contact for 11 s: down, not yet silent.
  await contactAgo(db, n1, 11);
  assert.deepEqual(await db.run(repairOps.repairSilentNodes()), []);
  assert.equal((await sessionState(db, active)).status, 'active');

  // Silent for 16 s: sweeps at once repair the active session once and move what did not end to
  // the least loaded up node (fra-2 carries nothing, fra-3 one session).
  await contactAgo(db, n1, 16);
  const swept = (await Promise.all([db.run(repairOps.repairSilentNodes()), db.run(repairOps.repairSilentNodes()), db.run(repairOps.repairSilentNodes())])).flat();
  swept.push(...(await db.run(repairOps.repairSilentNodes())));
  assert.deepEqual(pairs(swept), [[active, 'session_stats'], [active, 'session_end']]);
  assert.equal((await sessionState(db, active)).status, 'idle');
  assert.deepEqual(
    await Promise.all([active, idle, ended, onN3].map((s) => db.run(placementOps.placementOf(s)))),
    [n2, n2, n1, n3],
    'to the least loaded, ties in the order of upNodes (fra-2 before fra-3); an ended session stays',
  );
  assert.deepEqual((await db.run(placementOps.sessionsMovedFrom(n1))).map((s) => s.id), [active, idle], "fra-1's late reports still count");

  // Its process, back: the same one carries its sessions again; another one hears of the repair.
  assert.equal(await db.run(repairOps.nodeHello(n1, 'boot-2')), 'new_after_repair');
  assert.equal(await db.run(repairOps.nodeHello(n1, 'boot-1')), 'same');
  assert.equal(await db.run(repairOps.nodeHello(n1, 'boot-2')), 'new', 'the repair is forgotten once the same process said hello');
});

eachDialect('silent nodes: claims released without an up node to move to; nothing repaired twice', async (db) => {
  const c = await customer(db);
  const n1 = (await node(db, 'sao-1', 'br-sao')).id;
  const claimed = await session(db, c, { claimed_at: Date.now() });
  const idle = await session(db, c, { status: 'idle' });
  await db.run(placementOps.placeSession(claimed, n1));
  await db.run(placementOps.placeSession(idle, n1));
  await contactAgo(db, n1, 16);
  assert.deepEqual(await db.run(repairOps.repairSilentNodes()), []);
  assert.equal((await sessionState(db, claimed)).claimed, false, 'a silent node holds no claim');
  assert.deepEqual([await db.run(placementOps.placementOf(claimed)), await db.run(placementOps.placementOf(idle))], [n1, n1], 'no up node in its zone: they stay');
  assert.deepEqual(await db.run(repairOps.repairSilentNodes()), []);
  assert.equal(await db.run(repairOps.nodeHello(n1, 'boot-1')), 'new', 'nothing was repaired');
  assert.equal(await countRows(db, 'events'), 0);
});

eachDialect("remove: a node's sessions repaired and moved to an up node of its zone, else their placements go", async (db) => {
  const c = await customer(db);
  const fra1 = await node(db, 'fra-1');
  const fra2 = await node(db, 'fra-2');
  const s1 = await session(db, c, { status: 'active' });
  const s2 = await session(db, c, { status: 'active' });
  await db.run(placementOps.placeSession(s1, fra1.id));
  await db.run(placementOps.placeSession(s2, fra2.id));
  await db.run(grantOps.grantBytes(fra1.id, c, 'alice', { cap: { up: null, down: 10 * MiB }, base: null, want: { up: MiB, down: MiB } }));

  const removed = await db.run(repairOps.removeNode('fra-1'));
  assert.equal(removed?.id, fra1.id);
  assert.equal(removed?.name, 'fra-1');
  assert.equal(await db.run(repairOps.removeNode('fra-1')), undefined);
  assert.equal(await db.run(nodeOps.findNodeByToken(fra1.token)), undefined);
  assert.equal((await sessionState(db, s1)).status, 'idle', 'repaired as its connections closing would');
  assert.equal(await db.run(placementOps.placementOf(s1)), fra2.id, 'moved to fra-2, up in the same zone');
  assert.equal(await countRows(db, 'events'), 2);
  assert.equal(await countRows(db, 'node_grants'), 0, 'its grants go with it');

  await contactAgo(db, fra2.id, 11);
  assert.equal((await db.run(repairOps.removeNode('fra-2')))?.id, fra2.id);
  assert.deepEqual([await db.run(placementOps.placementOf(s1)), await db.run(placementOps.placementOf(s2))], [undefined, undefined]);
  assert.equal(await countRows(db, 'session_placements'), 0);
  assert.equal((await sessionState(db, s2)).status, 'idle', 'the session itself stays');
  assert.deepEqual(await db.run(nodeOps.listNodes()), []);
});

eachDialect("carried sessions: an instance's own active sessions, placed on no node, are repaired once", async (db) => {
  const c = await customer(db);
  const other = await customer(db, 'other');
  const n1 = (await node(db, 'fra-1')).id;
  const reusable = await session(db, c, { status: 'active', uploaded_bytes: 3 });
  await db.sql('UPDATE sessions SET connections = 2 WHERE id = ?', reusable);
  const oneShot = await session(db, other, { status: 'active', reusable: false });
  const placed = await session(db, c, { status: 'active' });
  const idle = await session(db, c, { status: 'idle' });
  await db.run(placementOps.placeSession(placed, n1));

  assert.deepEqual(await db.run(repairOps.repairCarriedSessions([])), []);
  const repaired = await db.run(repairOps.repairCarriedSessions([oneShot, reusable, placed, idle, randomUUID()]));
  assert.deepEqual(repaired.map((e) => [e.customerId, e.event.session_id, e.event.event_type, e.event.uploaded_bytes]), [
    [c, reusable, 'session_stats', 3],
    [c, reusable, 'session_end', 3],
    [other, oneShot, 'session_stats', 0],
    [other, oneShot, 'session_end', 0],
  ]);
  assert.deepEqual(
    await Promise.all([reusable, oneShot, placed, idle].map(async (s) => [(await sessionState(db, s)).status, (await sessionState(db, s)).connections])),
    [['idle', 0], ['ended', 0], ['active', 0], ['idle', 0]],
  );
  assert.deepEqual(await db.run(repairOps.repairCarriedSessions([reusable, oneShot])), [], 'once');
  assert.equal(await countRows(db, 'events'), 4);
});

eachDialect('abandoned sessions: every active session placed on no node is closed, once', async (db) => {
  const c = await customer(db);
  const n1 = (await node(db, 'fra-1')).id;
  const reusable = await session(db, c, { status: 'active', uploaded_bytes: 3, duration: 4 });
  const oneShot = await session(db, c, { status: 'active', reusable: false });
  const placed = await session(db, c, { status: 'active' });
  const idle = await session(db, c, { status: 'idle' });
  await db.run(placementOps.placeSession(placed, n1));

  const repaired = await db.run(repairOps.repairAbandonedSessions());
  assert.deepEqual(repaired.map((e) => [e.event.session_id, e.event.event_type, e.event.uploaded_bytes, e.event.duration]), [
    [reusable, 'session_stats', 3, 4],
    [reusable, 'session_end', 3, 4],
    [oneShot, 'session_stats', 0, 0],
    [oneShot, 'session_end', 0, 0],
  ]);
  assert.deepEqual(
    await Promise.all([reusable, oneShot, placed, idle].map(async (s) => (await sessionState(db, s)).status)),
    ['idle', 'ended', 'active', 'idle'],
  );
  assert.deepEqual(await db.run(repairOps.repairAbandonedSessions()), [], 'once');
});
