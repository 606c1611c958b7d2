// A node's channel is held to its limits (server/cluster/node-guard.ts) without losing a
// legitimate node's counted bytes. Raw WebSockets holding real node tokens, on a real serve:
//  - reports over the rate are neither applied nor acknowledged, nor any after them on that
//    channel; the channel is closed with 1013 and, after reconnecting, the node's resend of
//    everything unacknowledged is counted once: every byte, none twice;
//  - a new channel of a node replaces the old one, closed with 4001;
//  - a frame over the 1 MiB limit closes the channel with 1009;
//  - a node opening channels too often is refused 429 before the upgrade.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { NODE_FRAME_LIMIT, NODE_LIMITS } from '../../server/cluster/node-guard.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';

let srv: RunningServer;
let owner: string;
let dir: string;
const sockets: WebSocket[] = [];

before(async () => {
  dir = tempDir('vad-node-guard-');
  srv = await startServer({ dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = (await srv.services.data.createToken('guard', 'owner')).token;
});
after(async () => {
  for (const s of sockets) s.terminate();
  await srv?.close();
  removeDir(dir);
});

const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);

/** A node's channel as a raw WebSocket: what it receives, how it closed, or the HTTP status that refused it. */
function channel(token: string) {
  const ws = new WebSocket(`${srv.origin.replace(/^http/, 'ws')}/v2/node/channel`, { headers: { authorization: `Bearer ${token}` } });
  sockets.push(ws);
  const got: Array<Record<string, any>> = [];
  let closed: { code: number; reason: string } | undefined;
  let refused: number | undefined;
  ws.on('message', (raw) => got.push(JSON.parse(String(raw))));
  ws.on('close', (code, reason) => (closed = { code, reason: String(reason) }));
  ws.on('unexpected-response', (_req, res) => {
    refused = res.statusCode;
    ws.terminate();
  });
  ws.on('error', () => {});
  const opened = new Promise<boolean>((resolve) => {
    ws.once('open', () => resolve(true));
    ws.once('close', () => resolve(false));
  });
  return { ws, got, opened, closed: () => closed, refused: () => refused, send: (m: unknown) => ws.send(JSON.stringify(m)) };
}

async function nodeWithSession(name: string, zone: string, host: string) {
  const added = await srv.services.data.addNode({ name, zone, public_host: host });
  const first = channel(added.token);
  assert.ok(await first.opened);
  first.send({ type: 'report', seq: 0, ports: { vless_ws_port: 8787 } });
  await waitFor(async () => ((await call('GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>).some((z) => z.code === zone && z.has_active_nodes), 5000, `${name} up`);
  const id = (await call('POST', '/sessions', { client_id: `c-${name}`, zone, reusable: true })).json.id as string;
  await waitFor(() => first.got.some((m) => m.type === 'state' && m.sessions.some((s: { id: string }) => s.id === id)), 5000, 'the session in its state');
  return { token: added.token, first, id };
}

test('reports over the rate are not acknowledged, nor any after them; resent after reconnecting, every byte counts once', async () => {
  const { token, first, id } = await nodeWithSession('rate-1', 'br-sao', '127.0.0.2');
  const N = NODE_LIMITS.reports.burst + 5;
  await waitFor(() => first.got.some((m) => m.type === 'ack' && m.hello), 5000, 'hello');
  for (let seq = 1; seq <= N; seq++) first.send({ type: 'report', seq, ports: { vless_ws_port: 8787 }, counters: { [id]: { up: 1, down: 1000 } } });
  await waitFor(() => first.closed() !== undefined, 5000, 'the channel closed');
  assert.equal(first.closed()!.code, 1013);
  // Applied: the reports before the refused one, in order (their acknowledgements may be lost
  // with the channel: resent, they are acknowledged again and not counted twice).
  const acked = first.got.filter((m) => m.type === 'ack' && !m.hello).map((m) => m.seq as number);
  assert.deepEqual(acked, acked.map((_, i) => i + 1), 'acknowledged in order');
  await new Promise((r) => setTimeout(r, 300));
  const applied = (await call('GET', `/sessions/${id}/status`)).json.downloaded_bytes / 1000;
  assert.ok(applied >= acked.length && applied < N, `${applied} of ${N} applied, ${acked.length} acknowledged`);

  // The node reconnects: the hello says the last applied; it resends everything after it.
  const again = channel(token);
  assert.ok(await again.opened);
  await waitFor(() => again.got.some((m) => m.type === 'ack' && m.hello), 5000, 'hello');
  const hello = again.got.find((m) => m.type === 'ack' && m.hello)!;
  assert.equal(hello.seq, applied, 'the last applied is the one before the refused report');
  // At the reports' rate now (its bucket is empty).
  for (let seq = acked.length + 1; seq <= N; seq++) {
    await new Promise((r) => setTimeout(r, 1500 / NODE_LIMITS.reports.rate));
    again.send({ type: 'report', seq, ports: { vless_ws_port: 8787 }, counters: { [id]: { up: 1, down: 1000 } } });
    await waitFor(() => again.got.some((m) => m.type === 'ack' && m.seq === seq), 5000, `report ${seq} acknowledged`);
  }
  const after = (await call('GET', `/sessions/${id}/status`)).json;
  assert.deepEqual([after.uploaded_bytes, after.downloaded_bytes], [N, N * 1000], 'every byte counted once');
});

test('one live channel per node: a new one replaces the old (4001); over 1 MiB a frame closes the channel (1009); too many channels are refused 429', async () => {
  const added = await srv.services.data.addNode({ name: 'many-1', zone: 'au-syd', public_host: '127.0.0.3' });
  const a = channel(added.token);
  assert.ok(await a.opened);
  const b = channel(added.token);
  assert.ok(await b.opened);
  await waitFor(() => a.closed() !== undefined, 5000, 'the old channel closed');
  assert.equal(a.closed()!.code, 4001);
  assert.match(a.closed()!.reason, /replaced/);
  assert.equal(b.closed(), undefined, 'the new one stays');

  b.ws.send(Buffer.alloc(NODE_FRAME_LIMIT + 1, 0x20));
  await waitFor(() => b.closed() !== undefined, 5000, 'the channel closed');
  assert.equal(b.closed()!.code, 1009);

  // The channel burst is spent (two above, more now): the next ones are refused before the upgrade.
  const more = Array.from({ length: NODE_LIMITS.channels.burst + 2 }, () => channel(added.token));
  await Promise.all(more.map((c) => c.opened));
  assert.ok(more.some((c) => c.refused() === 429), `refused: ${more.map((c) => c.refused()).join(',')}`);
  await waitFor(() => more.filter((c) => c.ws.readyState === WebSocket.OPEN).length <= 1, 5000, 'one live channel at most');
});
