// The nodes and placements repositories on both databases: a node's token (hashed, never an API
// token), contact and "up" by the database clock (and a clean stop), ports, listeners, relays, zones; placement by
// load, the sessions on a node or moved from it, the nodes of placed sessions.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { nodeClockText, nodeOps, nodeStateText } from '../../server/store/repos/nodes.ts';
import { placementOps } from '../../server/store/repos/placements.ts';
import { hashToken, tokenOps } from '../../server/store/repos/tokens.ts';
import { contactAgo, customer, session, setStatus } from '../helpers/cluster-rows.ts';
import { eachDialect } from '../helpers/dialects.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

eachDialect('nodes: add, find by id, name and token, contact and up, ports, listeners, relays, zones', async (db) => {
  const a = await db.run(nodeOps.addNode({ name: 'fra-1', zone: 'de-fra', public_host: 'fra1.example.net', vless_ws_port: 8443 }));
  const b = await db.run(nodeOps.addNode({ name: 'fra-2', zone: 'de-fra', public_host: 'fra2.example.net' }));
  await db.run(nodeOps.addNode({ name: 'sao-1', zone: 'br-sao', public_host: 'sao1.example.net' }));
  assert.match(a.token, /^vadn_/);
  assert.deepEqual(a.node, {
    id: a.node.id,
    name: 'fra-1',
    zone: 'de-fra',
    public_host: 'fra1.example.net',
    vless_ws_port: 8443,
    vless_tcp_port: null,
    proxy_port: null,
    token_prefix: a.token.slice(0, 11),
    created_at: a.node.created_at,
    last_contact: null,
    up: false,
    stopped_at: null,
    tls: false,
    tls_pcs: null,
    clock_skew_ms: null,
  });
  assert.match(a.node.created_at, ISO);
  assert.deepEqual(await db.run(nodeOps.getNode(a.node.id)), a.node);
  assert.deepEqual(await db.run(nodeOps.getNodeByName('fra-1')), a.node);
  assert.equal(await db.run(nodeOps.getNode(randomUUID())), undefined);

  // Only the hash is stored; node and API tokens never stand in for each other.
  const [stored] = await db.sql<{ token_hash: string }>('SELECT token_hash FROM nodes WHERE id = ?', a.node.id);
  assert.equal(stored.token_hash, hashToken(a.token));
  assert.equal((await db.run(nodeOps.findNodeByToken(a.token)))?.name, 'fra-1');
  assert.equal(await db.run(nodeOps.findNodeByToken('vadn_nope')), undefined);
  const api = await db.run(tokenOps.createToken('acme', 'owner'));
  assert.equal(await db.run(nodeOps.findNodeByToken(api.token)), undefined, 'an API token is no node token');
  assert.equal(await db.run(tokenOps.findToken(a.token)), undefined, 'a node token is no API token');
  await assert.rejects(db.run(nodeOps.addNode({ name: 'fra-1', zone: 'de-fra', public_host: 'x' })), /UNIQUE|duplicate key/);

  // Before any contact no node is up.
  assert.deepEqual([await db.run(nodeOps.upNodes('de-fra')), await db.run(nodeOps.activeNodeZones()), await db.run(nodeOps.relayNodes())], [[], [], []]);
  assert.equal(await db.run(nodeOps.touchNode(a.node.id, { vless_tcp_port: 9443, proxy_port: null })), true);
  assert.equal(await db.run(nodeOps.touchNode(b.node.id)), true);
  assert.equal(await db.run(nodeOps.touchNode(randomUUID())), false);
  let fra1 = (await db.run(nodeOps.getNode(a.node.id)))!;
  assert.equal(fra1.up, true);
  assert.match(fra1.last_contact!, ISO);
  assert.ok(Math.abs(Date.parse(fra1.last_contact!) - Date.now()) < 5000, 'the contact is now');
  assert.deepEqual([fra1.vless_ws_port, fra1.vless_tcp_port, fra1.proxy_port], [8443, 9443, null], 'ports not reported are kept');
  await db.run(nodeOps.touchNode(a.node.id, { vless_ws_port: null }));
  fra1 = (await db.run(nodeOps.getNode(a.node.id)))!;
  assert.deepEqual([fra1.vless_ws_port, fra1.vless_tcp_port], [null, 9443]);
  assert.deepEqual((await db.run(nodeOps.listNodes())).map((n) => [n.zone, n.name, n.up]), [
    ['br-sao', 'sao-1', false],
    ['de-fra', 'fra-1', true],
    ['de-fra', 'fra-2', true],
  ]);
  assert.deepEqual(await db.run(nodeOps.activeNodeZones()), ['de-fra']);

  // Listeners: TLS pins and the geo relay; relays are up nodes with both port and pin.
  // Also its clock's skew, as the node reports it: known (ahead or behind) or not yet.
  assert.equal((await db.run(nodeOps.getNode(a.node.id)))!.clock_skew_ms, null, 'nothing reported yet');
  await db.run(nodeOps.setNodeFacts(a.node.id, { relay_port: 8790, relay_pcs: 'ab'.repeat(32), tls: true, tls_pcs: 'cd'.repeat(32), clock_skew_ms: 90_000 }));
  await db.run(nodeOps.setNodeFacts(b.node.id, { relay_port: 8790, relay_pcs: null, tls: false, tls_pcs: null, clock_skew_ms: null }));
  fra1 = (await db.run(nodeOps.getNode(a.node.id)))!;
  assert.deepEqual([fra1.tls, fra1.tls_pcs, fra1.clock_skew_ms], [true, 'cd'.repeat(32), 90_000]);
  assert.equal(nodeClockText(fra1), 'clock 90 s ahead of the control plane');
  assert.equal((await db.run(nodeOps.getNode(b.node.id)))!.clock_skew_ms, null);
  await db.run(nodeOps.setNodeFacts(a.node.id, { relay_port: 8790, relay_pcs: 'ab'.repeat(32), tls: true, tls_pcs: 'cd'.repeat(32), clock_skew_ms: -7_000 }));
  assert.equal(nodeClockText((await db.run(nodeOps.getNode(a.node.id)))!), 'clock 7 s behind the control plane');
  assert.deepEqual(await db.run(nodeOps.relayNodes()), [
    { id: a.node.id, name: 'fra-1', zone: 'de-fra', public_host: 'fra1.example.net', relay_port: 8790, relay_pcs: 'ab'.repeat(32), token_hash: hashToken(a.token) },
  ]);

  assert.equal(await db.run(nodeOps.nodeReportSeq(a.node.id)), 0);
  assert.equal(await db.run(nodeOps.nodeReportSeq(randomUUID())), undefined);

  // A clean stop: down at once (no relay, no zone), its contact kept; its next contact makes it up again.
  assert.equal(await db.run(nodeOps.nodeStopped(a.node.id)), true);
  assert.equal(await db.run(nodeOps.nodeStopped(randomUUID())), false);
  fra1 = (await db.run(nodeOps.getNode(a.node.id)))!;
  assert.equal(fra1.up, false);
  assert.match(fra1.stopped_at!, ISO);
  assert.ok(Math.abs(Date.parse(fra1.stopped_at!) - Date.now()) < 5000, 'stopped now');
  assert.match(fra1.last_contact!, ISO);
  assert.deepEqual([await db.run(nodeOps.relayNodes()), (await db.run(nodeOps.upNodes('de-fra'))).map((n) => n.name)], [[], ['fra-2']]);
  await db.run(nodeOps.touchNode(a.node.id));
  fra1 = (await db.run(nodeOps.getNode(a.node.id)))!;
  assert.deepEqual([fra1.up, fra1.stopped_at], [true, null]);
  assert.equal((await db.run(nodeOps.relayNodes())).length, 1);

  // Found lost (its channel ended without a stop): not while it was in contact within the seconds
  // given; once not, down (its contact and stop unchanged, still 'down' in words), once only; its
  // next contact makes it up again. A stopped node is not lost as well.
  assert.equal(await db.run(nodeOps.nodeLost(a.node.id, 5)), false);
  assert.equal((await db.run(nodeOps.getNode(a.node.id)))!.up, true);
  await contactAgo(db, a.node.id, 3);
  assert.equal(await db.run(nodeOps.nodeLost(a.node.id, 2)), true);
  assert.equal(await db.run(nodeOps.nodeLost(a.node.id, 2)), false);
  fra1 = (await db.run(nodeOps.getNode(a.node.id)))!;
  assert.deepEqual([fra1.up, fra1.stopped_at, nodeStateText(fra1)], [false, null, 'down']);
  assert.match(fra1.last_contact!, ISO);
  assert.deepEqual([await db.run(nodeOps.relayNodes()), (await db.run(nodeOps.upNodes('de-fra'))).map((n) => n.name)], [[], ['fra-2']]);
  await db.run(nodeOps.touchNode(a.node.id));
  assert.equal((await db.run(nodeOps.getNode(a.node.id)))!.up, true);
  await db.run(nodeOps.nodeStopped(a.node.id));
  await contactAgo(db, a.node.id, 3);
  assert.equal(await db.run(nodeOps.nodeLost(a.node.id, 2)), false);
  await db.run(nodeOps.touchNode(a.node.id));
  assert.throws(() => nodeOps.nodeLost(a.node.id, 1.5).next(), RangeError);

  // Out of contact for more than 10 s: down, and no longer a relay.
  await contactAgo(db, a.node.id, 11);
  assert.equal((await db.run(nodeOps.getNodeByName('fra-1')))?.up, false);
  assert.deepEqual((await db.run(nodeOps.upNodes('de-fra'))).map((n) => n.name), ['fra-2']);
  assert.deepEqual(await db.run(nodeOps.relayNodes()), []);
  await contactAgo(db, b.node.id, 11);
  assert.deepEqual(await db.run(nodeOps.activeNodeZones()), []);
});

eachDialect('placements: by load, sessions on a node or moved from it, placed nodes, active session nodes', async (db) => {
  const c = await customer(db);
  const n1 = (await db.run(nodeOps.addNode({ name: 'fra-1', zone: 'de-fra', public_host: 'fra1.example.net' }))).node;
  const n2 = (await db.run(nodeOps.addNode({ name: 'fra-2', zone: 'de-fra', public_host: 'fra2.example.net' }))).node;
  await db.run(nodeOps.touchNode(n1.id));
  await db.run(nodeOps.touchNode(n2.id));
  const s1 = await session(db, c);
  const s2 = await session(db, c, { client_id: 'bob', reusable: false });
  const s3 = await session(db, c);

  assert.equal((await db.run(nodeOps.upNodes('de-fra')))[0].name, 'fra-1', 'equal load: by name');
  await db.run(placementOps.placeSession(s1, n1.id));
  assert.equal((await db.run(nodeOps.upNodes('de-fra')))[0].name, 'fra-2', 'the least loaded node comes first');
  await db.run(placementOps.placeSession(s2, n2.id));
  assert.equal(await db.run(placementOps.placementOf(s1)), n1.id);
  assert.equal(await db.run(placementOps.placementOf(s3)), undefined);

  const onN2 = await db.run(placementOps.sessionsOnNode(n2.id));
  assert.deepEqual(onN2, [
    {
      id: s2,
      customer_id: c,
      client_id: 'bob',
      zone: 'de-fra',
      reusable: false,
      paused: false,
      status: 'created',
      uploaded_bytes: 0,
      downloaded_bytes: 0,
      duration: 0,
      connections: 0,
      created_at: '2026-11-22T10:00:00.000Z',
      expires_at: null,
    },
  ]);
  await db.run(placementOps.placeSession(s3, n2.id));
  assert.deepEqual((await db.run(placementOps.sessionsOnNode(n2.id))).map((s) => s.id), [s2, s3], 'in creation order');

  const placed = await db.run(placementOps.placedNodes([s3, s1, randomUUID()]));
  assert.deepEqual(placed.map((p) => [p.session_id, p.name, p.up]).sort(), [[s1, 'fra-1', true], [s3, 'fra-2', true]].sort());
  assert.equal(placed.find((p) => p.session_id === s1)?.id, n1.id);
  assert.deepEqual(await db.run(placementOps.placedNodes([])), []);

  // Moved from a node (as crash repair moves): listed until the session is placed again.
  await db.sql('UPDATE session_placements SET moved_from = ? WHERE session_id = ?', n1.id, s2);
  assert.deepEqual((await db.run(placementOps.sessionsMovedFrom(n1.id))).map((s) => s.id), [s2]);
  await db.run(placementOps.placeSession(s2, n1.id));
  assert.deepEqual(await db.run(placementOps.sessionsMovedFrom(n1.id)), []);
  assert.equal(await db.run(placementOps.placementOf(s2)), n1.id);

  // Active sessions and their nodes (null: a serve data plane carries it).
  const s4 = await session(db, c, { client_id: 'carol', status: 'active' });
  await setStatus(db, s1, 'active');
  assert.deepEqual(await db.run(placementOps.activeSessionNodes(c)), [
    { client_id: 'alice', node_id: n1.id },
    { client_id: 'carol', node_id: null },
  ]);
  assert.equal(await db.run(placementOps.placementOf(s4)), undefined);
  assert.deepEqual(await db.run(placementOps.activeSessionNodes(randomUUID())), []);
});
