// Periodic caps and expiry on a data-plane node (in cluster mode): a control plane on a
// throwaway PostgreSQL and a real node (runNode, in process on 127.0.0.2, so the injected wall
// clock moves both). A daily client cap set through the API cuts a transfer through the node and
// refuses new connections there; the status says until when; when the day turns the node lets
// the same session in again by itself. A session expiring while it relays through the node is cut
// there at its expiry.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setWallClock } from '../../server/time.ts';
import { startNodeCluster, type NodeCluster } from '../helpers/node-cluster.ts';
import { waitFor } from '../helpers/server.ts';
import { openVlessEcho as openEcho } from '../dataplane/helpers/targets.ts';

const DAY = 86_400_000;
let cluster: NodeCluster;
let shift = 0;

before(async () => {
  setWallClock(() => Date.now() + shift);
  cluster = await startNodeCluster('quota-node');
});
after(async () => {
  setWallClock();
  await cluster?.close();
});

const call = (method: string, path: string, body?: unknown) => cluster.call(method, path, body);

/** A VLESS-over-TCP connection to the echo through the node (127.0.0.2). */
const openVlessEcho = (port: number, id: string, echoPort: number) => openEcho(port, id, echoPort, '127.0.0.2');

/** Pushes `n` bytes through the node to the echo; resolves with what came back. */
const pushThrough = (id: string, n: number) => cluster.onNode(id, n);

test('a daily client cap holds on a node and renews there when the day turns', async () => {
  await cluster.nodeUp();
  assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: 250_000, reset_period: 'day' })).status, 200);
  const made = await call('POST', '/sessions', { client_id: 'node-bob', zone: 'br-sao', reusable: true });
  assert.equal(made.json.configuration.address, '127.0.0.2');
  const id: string = made.json.id;
  // The node learns of the session (and the period's bases) from its state message.
  await waitFor(async () => (await pushThrough(id, 16 * 1024)) > 0, 10_000, 'the node admits the session');
  const got = await pushThrough(id, 600_000);
  assert.ok(got < 600_000, `cut on the node (${got} back)`);
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.over_quota === true, 10_000, 'over quota (reported by the node)');
  const status = (await call('GET', `/sessions/${id}/status`)).json;
  assert.ok(status.downloaded_bytes < 250_000 + 64 * 1024, `at most a chunk over (${status.downloaded_bytes})`);
  assert.equal(status.over_quota_until, new Date(Math.floor((Date.now() + shift) / DAY) * DAY + DAY).toISOString());
  // Refused on the node while over, once its state carries the reported counters (rebuilt every
  // 250 ms): a client the node had dropped from memory is counted again from those sums.
  await waitFor(async () => (await pushThrough(id, 50_000)) === 0, 5000, 'refused on the node while over');

  shift += Math.floor((Date.now() + shift) / DAY) * DAY + DAY - (Date.now() + shift) + 1000;
  await waitFor(async () => (await pushThrough(id, 50_000)) > 40_000, 12_000, 'the node lets it in again the next day');
  assert.equal((await call('DELETE', '/customer/limits/client')).status, 204);
});

test('a session expiring while it relays through a node is cut there at its expiry', async () => {
  const expiresAt = new Date(Date.now() + shift + 3000).toISOString();
  const made = await call('POST', '/sessions', { client_id: 'node-exp', zone: 'br-sao', reusable: true, expires_at: expiresAt });
  const id: string = made.json.id;
  let conn: Awaited<ReturnType<typeof openVlessEcho>> | undefined;
  await waitFor(async () => {
    conn = await openVlessEcho(cluster.node.ports.vless_tcp_port!, id, cluster.echo.port);
    if (conn.got() >= 4) return true;
    conn.s.destroy();
    return false;
  }, 10_000, 'the node admits the session');
  await conn!.closed;
  assert.ok(Date.now() + shift >= Date.parse(expiresAt) - 100, 'not cut before its expiry');
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.status === 'ended', 10_000, 'ended');
});
