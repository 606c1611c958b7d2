// Usage thresholds of traffic a data-plane node carries: a control plane on a throwaway
// PostgreSQL and a real node (runNode, in process on 127.0.0.2). The node's reports, once
// applied, touch their sessions: a lifetime client download cap is crossed at 50, 80 and 100 %
// through the node, and each usage_threshold webhook reaches a local receiver once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { startNodeCluster, type NodeCluster } from '../helpers/node-cluster.ts';
import { waitFor } from '../helpers/server.ts';

type Payload = { scope: string; client_id?: string; direction: string; threshold: number; used_bytes: number; cap_bytes: number };
let cluster: NodeCluster;
let receiver: Server;
const got: Payload[] = [];

before(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const json = JSON.parse(body) as { type: string; data: Payload };
      if (json.type === 'usage_threshold') got.push(json.data);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  cluster = await startNodeCluster('thresh-node', {
    egress: 'allow-all', thresholdsEveryMs: 100,
    webhooks: { pollMs: 50, baseDelayMs: 100, maxDelayMs: 400, timeoutMs: 3000, key: randomBytes(32) },
  });
});
after(async () => {
  await cluster?.close();
  await new Promise<void>((r) => receiver.close(() => r()));
});

const url = () => `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
const call = (method: string, path: string, body?: unknown) => cluster.call(method, path, body);
const pushThrough = (id: string, n: number) => cluster.onNode(id, n);

test('a client cap crossed through a node: 50, 80 and 100 % once each', async () => {
  await cluster.nodeUp();
  assert.equal((await call('POST', '/webhooks', { url: url(), events: ['usage_threshold'] })).status, 201);
  assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: 1_000_000 })).status, 200);
  const id: string = (await call('POST', '/sessions', { client_id: 'node-dave', zone: 'br-sao', reusable: true })).json.id;
  await waitFor(async () => (await pushThrough(id, 16 * 1024)) > 0, 10_000, 'the node admits the session');
  const at = (threshold: number) => got.filter((p) => p.client_id === 'node-dave' && p.threshold === threshold);

  await pushThrough(id, 560_000);
  await waitFor(() => at(50).length > 0, 10_000, 'the 50 % webhook');
  assert.deepEqual({ ...at(50)[0]!, used_bytes: 0 }, { scope: 'client', client_id: 'node-dave', direction: 'download', threshold: 50, used_bytes: 0, cap_bytes: 1_000_000 });
  await pushThrough(id, 300_000);
  await waitFor(() => at(80).length > 0, 10_000, 'the 80 % webhook');
  // Past the node's grant the connection waits for the next one; a push gives up 1.5 s after its
  // last write (a loaded machine may take longer to grant), so it pushes again, as a client would
  // reconnect, until the cap is crossed (then it is refused).
  await pushThrough(id, 400_000);
  await waitFor(async () => at(100).length > 0 || ((await pushThrough(id, 100_000)) >= 0 && at(100).length > 0), 20_000, 'the 100 % webhook');
  await new Promise((r) => setTimeout(r, 1200));
  assert.deepEqual([at(50).length, at(80).length, at(100).length], [1, 1, 1]);
});
