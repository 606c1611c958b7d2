// Support's view through a data-plane node and across instances: a control plane on a throwaway
// PostgreSQL and a node (127.0.0.2) connected to it, and a second instance on the same database.
// A raw VLESS connection through the node shows in the session's live connections with the
// node's name, on either instance (the second one asks the first over the database), and is gone
// when it closes; a connection refused on the node (the session paused; a session placed
// elsewhere: unknown) shows in the session's and the client's refusals; a refusal on the first
// instance's own data plane shows on a read of the second; a stopped instance is named.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openVlessEcho, pushThroughEcho } from '../dataplane/helpers/targets.ts';
import type { RunningNode } from '../../server/node/run.ts';
import type { PgServer } from '../helpers/postgres.ts';
import { startNodeCluster, type NodeCluster } from '../helpers/node-cluster.ts';

let cluster: NodeCluster;
let pgServer: PgServer;
let cp: RunningServer;
/** A second instance on the same database, the node not attached to it. */
let other: RunningServer;
let sao: RunningNode;
let echo: NodeCluster['echo'];
let owner: string;
const dirs: string[] = [];

before(async () => {
  cluster = await startNodeCluster('support', { vlessTcpPort: 0 });
  ({ pg: pgServer, srv: cp, node: sao, echo, owner } = cluster);
  const otherDir = tempDir('vad-support-cp2-');
  dirs.push(otherDir);
  other = await startServer({ dataDir: otherDir, database: pgServer.url(), port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  await cluster.nodeUp();
});
after(async () => {
  await other?.close();
  await cluster?.close();
  for (const d of dirs) removeDir(d);
});

const call = (method: string, path: string, body?: unknown) => callApi(cp.baseUrl, owner, method, path, body);

test('a node\'s live connections and refusals are gathered through its channel', async () => {
  const created = await call('POST', '/sessions', { client_id: 'support-node', zone: 'br-sao', reusable: true });
  assert.equal(created.status, 201);
  const id = created.json.id as string;
  const port = sao.ports.vless_tcp_port!;
  // The node learns of its session from its next state message.
  await waitFor(async () => (await pushThroughEcho(port, id, echo.port, 1024, '127.0.0.2')) > 0, 10_000, 'the node admits');
  const conn = await openVlessEcho(port, id, echo.port, '127.0.0.2');
  assert.equal(conn.got(), 4);
  let listed: Array<Record<string, any>> = [];
  await waitFor(async () => {
    listed = (await call('GET', `/sessions/${id}/connections`)).json.connections;
    return listed.length === 1;
  }, 5000, 'the node\'s connection listed');
  assert.equal(listed[0].node, 'sao-1');
  assert.equal(listed[0].transport, 'tcp');
  assert.deepEqual(listed[0].destination, { host: '127.0.0.1', port: echo.port });
  assert.equal(listed[0].uploaded_bytes, 2);
  assert.equal(listed[0].downloaded_bytes, 2);
  assert.match(listed[0].client_address, /127\.0\.0\./);
  // Another instance does not carry the node's channel: it asks the first one, which asks its node.
  const elsewhere = (await callApi(other.baseUrl, owner, 'GET', `/sessions/${id}/connections`)).json;
  // (speeds move with the clock: compared without them)
  const steady = (cs: Array<Record<string, any>>) => cs.map(({ upload_speed: _u, download_speed: _d, ...c }) => c);
  assert.deepEqual(steady(elsewhere.connections), steady(listed));
  assert.deepEqual([elsewhere.unanswered_nodes, elsewhere.unanswered_instances], [[], []]);
  conn.s.destroy();
  await waitFor(async () => (await call('GET', `/sessions/${id}/connections`)).json.connections.length === 0, 5000, 'gone once closed');

  assert.equal((await call('PATCH', `/sessions/${id}/pause`)).status, 200);
  let refusals: Record<string, any> = {};
  await waitFor(async () => {
    const refused = await openVlessEcho(port, id, echo.port, '127.0.0.2');
    refused.s.destroy();
    refusals = (await call('GET', `/sessions/${id}/refusals`)).json;
    return refusals.refusals.some((r: { reason: string }) => r.reason === 'paused');
  }, 5000, 'the node\'s refusal listed');
  const paused = refusals.refusals.find((r: { reason: string }) => r.reason === 'paused');
  assert.equal(paused.node, 'sao-1');
  assert.equal(paused.transport, 'tcp');
  assert.equal(paused.session_id, id);
  assert.ok(refusals.counts_last_hour.paused >= 1);
  assert.deepEqual(refusals.unanswered_nodes, []);
  const client = (await call('GET', '/clients/support-node/refusals')).json;
  assert.ok(client.refusals.some((r: { reason: string; node: string }) => r.reason === 'paused' && r.node === 'sao-1'));
});

test('a session the node does not carry is refused there as unknown, and that shows on the session', async () => {
  // Placed on the control plane's own data plane (de-fra), asked for at the node.
  const created = await call('POST', '/sessions', { client_id: 'support-node-2', zone: 'de-fra', reusable: true });
  assert.equal(created.status, 201);
  const id = created.json.id as string;
  const wrong = await openVlessEcho(sao.ports.vless_tcp_port!, id, echo.port, '127.0.0.2');
  await wrong.closed;
  assert.ok(wrong.got() < 4, 'nothing relayed');
  const r = (await call('GET', `/sessions/${id}/refusals`)).json;
  assert.deepEqual(r.refusals.map((x: { reason: string; node: string }) => [x.reason, x.node]), [['unknown', 'sao-1']]);
  assert.deepEqual(r.counts_last_hour, { unknown: 1 });
});

test('a refusal on another instance\'s own data plane is read on this one; a stopped instance is named at once', async () => {
  const created = await call('POST', '/sessions', { client_id: 'support-cp', zone: 'de-fra', reusable: true });
  const id = created.json.id as string;
  assert.equal((await call('PATCH', `/sessions/${id}/pause`)).status, 200);
  const refused = await openVlessEcho(cp.vlessTcpPort!, id, echo.port);
  await refused.closed;
  // Read on the second instance: the refusal is held by the first one's data plane only.
  const readOther = (path: string) => callApi(other.baseUrl, owner, 'GET', path);
  let r: Record<string, any> = {};
  await waitFor(async () => {
    r = (await readOther(`/sessions/${id}/refusals`)).json;
    return r.refusals.length > 0;
  }, 5000, 'the first instance\'s refusal read on the second');
  assert.deepEqual(r.refusals.map((x: { reason: string; node: string; session_id: string }) => [x.reason, x.node, x.session_id]), [['paused', 'local', id]]);
  assert.deepEqual(r.counts_last_hour, { paused: 1 });
  assert.deepEqual([r.unanswered_nodes, r.unanswered_instances], [[], []]);
  const byClient = (await readOther('/clients/support-cp/refusals')).json;
  assert.deepEqual(byClient.refusals.map((x: { reason: string; node: string }) => [x.reason, x.node]), [['paused', 'local']]);
  // Another customer's client of the same id: the first instance answers for the customer asked about only.
  const stranger = (await cp.services.data.createToken('support-stranger', 'owner')).token;
  const theirs = (await callApi(other.baseUrl, stranger, 'GET', '/clients/support-cp/refusals')).json;
  assert.deepEqual(theirs, { refusals: [], counts_last_hour: {}, unanswered_nodes: [], unanswered_instances: [] });
  // A question with a token-sized payload or garbage is ignored, and the next read still works.
  await cp.services.data.askInstances('x'.repeat(5000));
  await cp.services.data.askInstances('{"r":1}');

  // A third instance starts, is seen, then stops: a read names it, and still answers within about a second.
  const seenBefore = await cp.services.data.instancesSeenSince(new Date(Date.now() - 60_000).toISOString());
  const thirdDir = tempDir('vad-support-cp3-');
  dirs.push(thirdDir);
  const third = await startServer({ dataDir: thirdDir, database: pgServer.url(), port: 0, vlessTcpPort: null, proxyPort: null });
  const seen = await cp.services.data.instancesSeenSince(new Date(Date.now() - 60_000).toISOString());
  const thirdId = seen.filter((i) => !seenBefore.includes(i));
  assert.equal(thirdId.length, 1);
  assert.equal((await readOther(`/sessions/${id}/refusals`)).json.unanswered_instances.length, 0, 'the third answers while it runs');
  await third.close();
  const started = Date.now();
  const after = (await call('GET', `/sessions/${id}/refusals`)).json;
  const took = Date.now() - started;
  assert.deepEqual(after.unanswered_instances, thirdId);
  assert.deepEqual(after.refusals.map((x: { reason: string; node: string }) => [x.reason, x.node]), [['paused', 'local']], 'its own, once');
  assert.ok(took < 2000, `answered in ${took} ms`);
});
