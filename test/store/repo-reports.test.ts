// Reports, grants and claims on both databases: a node's report and a journal's report applied
// exactly once (bytes added, events stored, what the node used of its grants); byte grants that
// together never exceed the cap, released down to KEEP_IDLE by generation; claims of a
// session's first connection under central max_sessions, also when two nodes ask at once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { KEEP_IDLE } from '../../server/store/grants.ts';
import { grantOps } from '../../server/store/repos/grants.ts';
import { nodeOps } from '../../server/store/repos/nodes.ts';
import { placementOps } from '../../server/store/repos/placements.ts';
import { reportOps } from '../../server/store/repos/reports.ts';
import { countRows, customer, ensureJournalSeqs, eventRow, MiB, session, sessionState } from '../helpers/cluster-rows.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';

async function node(db: DialectDb, name: string): Promise<string> {
  const { node: n } = await db.run(nodeOps.addNode({ name, zone: 'de-fra', public_host: `${name}.example.net` }));
  await db.run(nodeOps.touchNode(n.id));
  return n.id;
}

async function used(db: DialectDb, nodeId: string): Promise<Array<[string, number, number]>> {
  const rows = await db.sql<{ client_id: string; used_up: unknown; used_down: unknown }>('SELECT client_id, used_up, used_down FROM node_grants WHERE node_id = ? ORDER BY client_id', nodeId);
  return rows.map((r) => [r.client_id, Number(r.used_up), Number(r.used_down)]);
}

eachDialect("reports: a node's report applied once, to its own and moved-from sessions, with events and used grants", async (db) => {
  const c = await customer(db);
  const n1 = await node(db, 'fra-1');
  const n2 = await node(db, 'fra-2');
  const s1 = await session(db, c);
  const s2 = await session(db, c, { client_id: 'bob' });
  const s3 = await session(db, c);
  await db.run(placementOps.placeSession(s1, n1));
  await db.run(placementOps.placeSession(s2, n2));
  await db.run(placementOps.placeSession(s3, n2));
  await db.sql('UPDATE session_placements SET moved_from = ? WHERE session_id = ?', n1, s3);

  const adds = [
    { id: s1, uploaded_bytes: 100, downloaded_bytes: 200, status: 'active' as const, duration: 5, connections: 1 },
    { id: s2, uploaded_bytes: 7, downloaded_bytes: 7 },
    { id: s3, uploaded_bytes: 10, downloaded_bytes: 20 },
  ];
  const stored = await db.run(reportOps.applyNodeReport(n1, 1, adds, [eventRow(c, s1, 'session_start'), eventRow(c, s1, 'session_stats', 2)]));
  assert.ok(stored);
  assert.deepEqual(stored.map(({ id: _id, ...e }) => e), [
    { session_id: s1, event_type: 'session_start', created_at: '2026-11-22T10:00:01.000Z', duration: 0, downloaded_bytes: 0, uploaded_bytes: 0 },
    { session_id: s1, event_type: 'session_stats', created_at: '2026-11-22T10:00:01.000Z', duration: 2, downloaded_bytes: 20, uploaded_bytes: 200 },
  ]);
  assert.ok(stored[1].id > stored[0].id);
  assert.deepEqual(await sessionState(db, s1), { status: 'active', up: 100, down: 200, duration: 5, connections: 1, claimed: false });
  assert.deepEqual([(await sessionState(db, s2)).up, (await sessionState(db, s3)).down], [0, 20], "another node's session is skipped; a moved-from one counts");
  // What the node moved uses its grants (the client's and the customer's), also the bytes of a
  // session whose counters are no longer its to add to: it moved them.
  assert.deepEqual(await used(db, n1), [['', 117, 227], ['alice', 110, 220], ['bob', 7, 7]]);

  // The same seq again (a lost acknowledgement), or an older one: nothing is added or stored.
  assert.equal(await db.run(reportOps.applyNodeReport(n1, 1, adds, [eventRow(c, s1, 'session_end')])), false);
  assert.equal(await db.run(reportOps.applyNodeReport(n1, 0, adds)), false);
  assert.equal(await db.run(reportOps.applyNodeReport(randomUUID(), 5, adds)), false, 'no such node');
  assert.equal(await countRows(db, 'events'), 2);
  assert.equal(await db.run(nodeOps.nodeReportSeq(n1)), 1);

  // The next report adds to the counters (never writes over them); no bytes, no grant use.
  assert.deepEqual(await db.run(reportOps.applyNodeReport(n1, 2, [{ id: s1, uploaded_bytes: 1, downloaded_bytes: 2, status: 'idle' }])), []);
  assert.deepEqual(await sessionState(db, s1), { status: 'idle', up: 101, down: 202, duration: 5, connections: 1, claimed: false });
  await db.run(reportOps.applyNodeReport(n2, 1, [{ id: s2, uploaded_bytes: 0, downloaded_bytes: 0, duration: 9 }]));
  assert.deepEqual([(await sessionState(db, s2)).duration, await used(db, n2)], [9, []]);
  assert.equal(await db.run(nodeOps.nodeReportSeq(n1)), 2);
});

eachDialect("reports: a journal's report applied once per journal, to any session", async (db) => {
  await ensureJournalSeqs(db);
  const c = await customer(db);
  const n1 = await node(db, 'fra-1');
  const s1 = await session(db, c);
  const s2 = await session(db, c);
  await db.run(placementOps.placeSession(s2, n1));
  const adds = [
    { id: s1, uploaded_bytes: 5, downloaded_bytes: 6, status: 'active' as const, connections: 2 },
    { id: s2, uploaded_bytes: 1, downloaded_bytes: 1 },
  ];
  const stored = await db.run(reportOps.applyJournalReport('j1', 1, adds, [eventRow(c, s1, 'session_start')]));
  assert.deepEqual(stored && stored.map((e) => [e.session_id, e.event_type]), [[s1, 'session_start']]);
  assert.deepEqual(await sessionState(db, s1), { status: 'active', up: 5, down: 6, duration: 0, connections: 2, claimed: false });
  assert.equal((await sessionState(db, s2)).up, 1, 'a placed session counts too: several data planes may carry one');
  assert.equal(await db.run(reportOps.applyJournalReport('j1', 1, adds, [eventRow(c, s1, 'session_end')])), false);
  assert.deepEqual(await db.run(reportOps.applyJournalReport('j2', 1, adds)), [], 'another journal counts on its own');
  assert.deepEqual(await db.run(reportOps.applyJournalReport('j1', 3, adds)), []);
  assert.equal(await db.run(reportOps.applyJournalReport('j1', 2, adds)), false);
  assert.deepEqual(await sessionState(db, s1), { status: 'active', up: 15, down: 18, duration: 0, connections: 2, claimed: false });
  assert.equal(await countRows(db, 'events'), 1);
  assert.equal(await countRows(db, 'node_grants'), 0, "a journal's bytes use no node's grant");
});

eachDialect('grants: top-ups from what no node holds, reports use them, releases keep KEEP_IDLE by generation', async (db) => {
  const c = await customer(db);
  const n1 = await node(db, 'fra-1');
  const n2 = await node(db, 'fra-2');
  const s1 = await session(db, c, { client_id: 'c-0' });
  await db.run(placementOps.placeSession(s1, n1));

  const cap = { up: null, down: 64 * MiB };
  const first = await db.run(grantOps.grantBytes(n1, c, 'c-0', { cap, base: null, want: { up: MiB, down: 8 * MiB } }));
  assert.deepEqual(first, { left: { up: null, down: 8 * MiB }, final: { up: false, down: false }, used: { up: 0, down: 0 }, gen: 0 });
  assert.equal(await db.run(grantOps.releaseGrant(n1, c, 'c-0', 5)), false, 'another generation: nothing released');
  assert.equal(await db.run(grantOps.releaseGrant(n1, c, 'c-0', 0)), true);
  assert.equal(await db.run(grantOps.releaseGrant(n1, c, 'c-0', 0)), false, 'the generation moved on');
  assert.equal(await db.run(grantOps.releaseGrant(n1, c, 'nobody', 0)), false);
  const kept = await db.run(grantOps.grantBytes(n1, c, 'c-0', { cap, base: null, want: { up: MiB, down: MiB } }));
  assert.deepEqual([kept.left.down, kept.gen], [KEEP_IDLE, 1], 'KEEP_IDLE kept, in the next generation');

  // A 10 MiB cap shared by two nodes: the second gets only what the first does not hold.
  const ten = { cap: { up: null, down: 10 * MiB }, base: null };
  const client = 'c-1';
  const s2 = await session(db, c, { client_id: client });
  await db.run(placementOps.placeSession(s2, n1));
  assert.equal((await db.run(grantOps.grantBytes(n1, c, client, { ...ten, want: { up: MiB, down: 6 * MiB } }))).left.down, 6 * MiB);
  const second = await db.run(grantOps.grantBytes(n2, c, client, { ...ten, want: { up: MiB, down: 6 * MiB } }));
  assert.deepEqual([second.left.down, second.final.down], [4 * MiB, true]);
  // fra-1 moves its 6 MiB (a report uses its grant and counts in the total): nothing is left.
  await db.run(reportOps.applyNodeReport(n1, 1, [{ id: s2, uploaded_bytes: 0, downloaded_bytes: 6 * MiB }]));
  const spent = await db.run(grantOps.grantBytes(n1, c, client, { ...ten, want: { up: MiB, down: 6 * MiB } }));
  assert.deepEqual([spent.left.down, spent.final.down, spent.used.down], [0, true, 6 * MiB]);
  // fra-2 goes idle and gives back all but KEEP_IDLE: fra-1 gets the rest.
  assert.equal(await db.run(grantOps.releaseGrant(n2, c, client, 0)), true);
  const topped = await db.run(grantOps.grantBytes(n1, c, client, { ...ten, want: { up: MiB, down: 6 * MiB } }));
  assert.deepEqual([topped.left.down, topped.final.down], [4 * MiB - KEEP_IDLE, true]);

  // The customer's grant (client '') counts every client's bytes; a base moves where the cap counts from.
  const whole = await db.run(grantOps.grantBytes(n2, c, '', { cap: { up: null, down: 7 * MiB }, base: null, want: { up: MiB, down: 4 * MiB } }));
  assert.equal(whole.left.down, MiB, '7 MiB cap, 6 MiB moved');
  const based = await db.run(grantOps.grantBytes(n1, c, '', { cap: { up: null, down: 7 * MiB }, base: { up: 0, down: 6 * MiB }, want: { up: MiB, down: 4 * MiB } }));
  assert.deepEqual([based.left.down, based.used.down], [4 * MiB, 6 * MiB]);
});

eachDialect('grants: many nodes asking at once never hold more than the cap together', async (db) => {
  const c = await customer(db);
  const nodes = await Promise.all(Array.from({ length: 8 }, (_, i) => node(db, `n-${i}`)));
  const grants = await Promise.all(nodes.map((n) => db.run(grantOps.grantBytes(n, c, 'c', { cap: { up: null, down: 10 * MiB }, base: null, want: { up: MiB, down: 3 * MiB } }))));
  assert.equal(grants.reduce((sum, g) => sum + g.left.down!, 0), 10 * MiB);
  assert.equal(grants.filter((g) => g.final.down).length >= 1, true);
});

eachDialect('claims: max_sessions counts other nodes, the serve data plane and fresh claims; two nodes cannot both take the last place', async (db) => {
  const c = await customer(db);
  const n1 = await node(db, 'fra-1');
  const n2 = await node(db, 'fra-2');
  const a1 = await session(db, c, { status: 'active' });
  const a2 = await session(db, c);
  const a3 = await session(db, c);
  await db.run(placementOps.placeSession(a1, n1));
  await db.run(placementOps.placeSession(a2, n1));
  await db.run(placementOps.placeSession(a3, n2));

  assert.equal(await db.run(grantOps.claimSession(n2, a3, [], 1)), false, 'active on another node');
  assert.equal(await db.run(grantOps.claimSession(n1, a2, [], 1)), true, 'on this node only what it says is active counts');
  assert.equal((await sessionState(db, a2)).claimed, true);
  assert.equal(await db.run(grantOps.claimSession(n1, a2, [a1], 1)), false, 'the node says a1 is active');
  // a1 active on fra-1 and a2 just claimed: two other sessions.
  assert.equal(await db.run(grantOps.claimSession(n2, a3, [], 2)), false);
  assert.equal(await db.run(grantOps.claimSession(n2, a3, [], 3)), true);
  // A claim older than the window no longer counts; ended sessions never do.
  await db.sql('UPDATE sessions SET claimed_at = ? WHERE id IN (?, ?)', Date.now() - 6000, a2, a3);
  await db.sql("UPDATE sessions SET status = 'ended' WHERE id = ?", a1);
  assert.equal(await db.run(grantOps.claimSession(n2, a3, [], 1)), true);
  assert.equal(await db.run(grantOps.claimSession(n2, randomUUID(), [], 5)), false, 'no such session');
  // Another client's sessions do not count; a session active on the serve data plane (no node) does.
  const b1 = await session(db, c, { client_id: 'bob', status: 'active' });
  const b2 = await session(db, c, { client_id: 'bob' });
  assert.equal(await db.run(grantOps.claimSession(n1, b2, [], 1)), false);
  await db.sql("UPDATE sessions SET status = 'idle' WHERE id = ?", b1);
  assert.equal(await db.run(grantOps.claimSession(n1, b2, [], 1)), true);

  // The last place, asked for by two nodes at once: one gets it (for each of several clients at once).
  const clients = Array.from({ length: 6 }, (_, i) => `racer-${i}`);
  const pairs = await Promise.all(clients.map(async (client_id) => [await session(db, c, { client_id }), await session(db, c, { client_id })]));
  for (const [x, y] of pairs) {
    await db.run(placementOps.placeSession(x, n1));
    await db.run(placementOps.placeSession(y, n2));
  }
  const won = await Promise.all(pairs.map(([x, y]) => Promise.all([db.run(grantOps.claimSession(n1, x, [], 1)), db.run(grantOps.claimSession(n2, y, [], 1))])));
  assert.deepEqual(won.map((w) => w.filter(Boolean).length), clients.map(() => 1));
});
