// Clients in cluster mode: a control plane on a throwaway PostgreSQL with its own data plane
// (the local view fed by notifications) and a real node (runNode, in process on 127.0.0.2).
// A client's override cap holds on the node while the template lets another client move more,
// and so does a reset of its usage; disabling a client cuts its live connection on the node and
// on serve's own data plane at once and refuses it on both until it is enabled; a client's
// expires_at cuts its connection on the node at that time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { RunningServer } from '../../server/serve.ts';
import type { RunningNode } from '../../server/node/run.ts';
import { startNodeCluster, type NodeCluster } from '../helpers/node-cluster.ts';
import { waitFor } from '../helpers/server.ts';
import { openVlessEcho, pushThroughEcho } from '../dataplane/helpers/targets.ts';

let cluster: NodeCluster;
let srv: RunningServer;
let node: RunningNode;
let echo: NodeCluster['echo'];

before(async () => {
  cluster = await startNodeCluster('clients-node', { vlessTcpPort: 0, egress: 'allow-all' });
  ({ srv, node, echo } = cluster);
});
after(() => cluster?.close());

const call = (method: string, path: string, body?: unknown) => cluster.call(method, path, body);
const onNode = (id: string, n: number) => cluster.onNode(id, n);
const onServe = (id: string, n: number) => pushThroughEcho(srv.vlessTcpPort!, id, echo.port, n);
const session = async (clientId: string, zone: string) => {
  const made = await call('POST', '/sessions', { client_id: clientId, zone, reusable: true });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  return made.json.id as string;
};

test('an override cap holds on the node while the template lets another client through; reset-usage lets it in again', async () => {
  await cluster.nodeUp();
  assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: 5_000_000 })).status, 200);
  assert.equal((await call('PATCH', '/clients/n-small/limits', { downloaded_bytes: 250_000 })).status, 200);
  const small = await session('n-small', 'br-sao');
  const plain = await session('n-plain', 'br-sao');
  await waitFor(async () => (await onNode(small, 16 * 1024)) > 0, 10_000, 'the node admits the session');
  const cut = await onNode(small, 600_000);
  assert.ok(cut < 450_000, `cut on the node by the override (${cut} back)`);
  const full = await onNode(plain, 600_000);
  assert.ok(full > 590_000, `the template lets another client through the node (${full})`);
  await waitFor(async () => (await call('GET', '/clients/n-small')).json.status === 'over_quota', 10_000, 'over quota (reported by the node)');
  await waitFor(async () => (await onNode(small, 50_000)) === 0, 5000, 'refused on the node while over');

  assert.equal((await call('POST', '/clients/n-small/reset-usage')).status, 200);
  await waitFor(async () => (await onNode(small, 50_000)) > 40_000, 10_000, 'the node lets it in again after the reset');
  assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);
});

test('disabling a client cuts it at once on the node and on serve\'s own data plane; enabling lets it in again', async () => {
  const there = await session('n-dis', 'br-sao');
  const here = await session('n-dis', 'de-fra');
  let far: Awaited<ReturnType<typeof openVlessEcho>> | undefined;
  await waitFor(async () => {
    far = await openVlessEcho(node.ports.vless_tcp_port!, there, echo.port, '127.0.0.2');
    if (far.got() >= 4) return true;
    far.s.destroy();
    return false;
  }, 10_000, 'the node admits the session');
  const near = await openVlessEcho(srv.vlessTcpPort!, here, echo.port);
  assert.ok(near.got() >= 4, 'serve relays the other session');
  const t0 = performance.now();
  assert.equal((await call('PATCH', '/clients/n-dis', { disabled: true })).status, 200);
  await Promise.race([Promise.all([far!.closed, near.closed]), new Promise((_r, j) => setTimeout(() => j(new Error('not cut within 3 s')), 3000))]);
  assert.ok(performance.now() - t0 < 3000);
  assert.equal(await onNode(there, 50_000), 0, 'refused on the node');
  assert.equal(await onServe(here, 50_000), 0, 'refused on serve');
  assert.equal((await call('PATCH', '/clients/n-dis', { disabled: false })).status, 200);
  await waitFor(async () => (await onNode(there, 50_000)) > 40_000, 10_000, 'the node lets it in again');
  await waitFor(async () => (await onServe(here, 50_000)) > 40_000, 10_000, 'serve lets it in again');
});

test('an override cap holds on serve\'s own data plane on PostgreSQL', async () => {
  assert.equal((await call('PATCH', '/clients/s-small/limits', { downloaded_bytes: 200_000 })).status, 200);
  const id = await session('s-small', 'de-fra');
  const cut = await onServe(id, 600_000);
  assert.ok(cut < 400_000, `cut by the override (${cut})`);
  const other = await session('s-plain', 'de-fra');
  assert.ok((await onServe(other, 600_000)) > 590_000, 'another client is not capped');
});

test('a client\'s expires_at cuts its connection on the node at that time and refuses it after', async () => {
  const id = await session('n-exp', 'br-sao');
  let conn: Awaited<ReturnType<typeof openVlessEcho>> | undefined;
  await waitFor(async () => {
    conn = await openVlessEcho(node.ports.vless_tcp_port!, id, echo.port, '127.0.0.2');
    if (conn.got() >= 4) return true;
    conn.s.destroy();
    return false;
  }, 10_000, 'the node admits the session');
  const at = Date.now() + 2000;
  assert.equal((await call('PATCH', '/clients/n-exp', { expires_at: new Date(at).toISOString() })).status, 200);
  await conn!.closed;
  const late = Date.now() - at;
  assert.ok(late >= -50 && late < 2500, `cut on the node at the client's expiry (${late} ms after)`);
  assert.equal(await onNode(id, 50_000), 0, 'refused on the node after its expiry');
});
