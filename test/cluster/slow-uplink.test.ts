// A node on a slow uplink sending a large report: the report takes longer to arrive than the silence
// after which either end gives the channel up (3 s), and neither does. The control plane counts the
// report's bytes as they come (not whole frames); the node, whose pings wait behind the report, hears
// the control plane's own pings. Real serve, a raw WebSocket holding a real node token, through a
// proxy that lets 128 KiB/s go from the node to the control plane.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import WebSocket from 'ws';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { ChannelSilence, CHANNEL_SILENT_MS, type ReadCounter } from '../../server/cluster/channel-silence.ts';
import { NODE_FRAME_LIMIT } from '../../server/cluster/node-guard.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';

const UPLINK = 128 * 1024;
const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A TCP proxy to `port` whose client-to-server direction carries `perSecond` bytes a second (in tenths). */
function slowUplink(port: number, perSecond: number): Promise<Server> {
  const srv = createServer((client) => {
    const up = connect(port, '127.0.0.1');
    up.pipe(client);
    const queue: Buffer[] = [];
    client.on('data', (c: Buffer) => queue.push(c));
    const tick = setInterval(() => {
      for (let budget = perSecond / 10; budget > 0 && queue.length; ) {
        const c = queue[0]!;
        const n = Math.min(c.length, budget);
        up.write(c.subarray(0, n));
        if (n === c.length) queue.shift();
        else queue[0] = c.subarray(n);
        budget -= n;
      }
    }, 100);
    const end = () => {
      clearInterval(tick);
      client.destroy();
      up.destroy();
    };
    for (const s of [client, up]) s.on('close', end).on('error', end);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

test('a report that takes 5 s to go up a slow uplink: the channel stays up at both ends and the report is acknowledged', async () => {
  const dir = tempDir('vad-slow-uplink-');
  const srv: RunningServer = await startServer({ dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: null });
  cleanups.push(() => removeDir(dir), () => srv.close());
  const proxy = await slowUplink(srv.apiPort, UPLINK);
  cleanups.push(() => new Promise((r) => proxy.close(r)));
  const { token } = await srv.services.data.addNode({ name: 'slow-1', zone: 'br-sao', public_host: '127.0.0.2' });

  const ws = new WebSocket(`ws://127.0.0.1:${(proxy.address() as AddressInfo).port}/v2/node/channel`, { headers: { authorization: `Bearer ${token}` } });
  cleanups.push(() => ws.terminate());
  let socket: ReadCounter = {};
  ws.once('upgrade', (res) => (socket = res.socket));
  const got: Array<Record<string, any>> = [];
  let closed: number | undefined;
  ws.on('message', (raw) => got.push(JSON.parse(String(raw))));
  ws.on('close', (code) => (closed = code));
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));

  // What the node does (node/channel-client.ts): a ping every 500 ms, and a watch on what it reads.
  const silence = new ChannelSilence(500, socket);
  let silentAt: number | undefined;
  const pinger = setInterval(() => {
    if (silence.silent() && silentAt === undefined) silentAt = Date.now();
    ws.ping();
  }, 500);
  cleanups.push(() => clearInterval(pinger));

  ws.send(JSON.stringify({ type: 'report', seq: 0, ports: { vless_ws_port: 8787 } }));
  await waitFor(() => got.some((m) => m.type === 'ack' && m.hello), 5000, 'hello');
  // Counters of sessions not placed on this node (dropped when applied): about 670 KiB, under the frame limit.
  const counters: Record<string, { up: number; down: number }> = {};
  for (let i = 0; i < 12_000; i++) counters[randomUUID()] = { up: 1, down: 1 };
  const report = JSON.stringify({ type: 'report', seq: 1, ports: { vless_ws_port: 8787 }, counters });
  assert.ok(report.length > 4 * UPLINK && report.length < NODE_FRAME_LIMIT, `${report.length} bytes`);
  const sentAt = Date.now();
  ws.send(report);
  await waitFor(() => got.some((m) => m.type === 'ack' && m.seq === 1) || closed !== undefined, 30_000, 'the report acknowledged');
  const took = Date.now() - sentAt;
  assert.equal(closed, undefined, 'the control plane kept the channel');
  assert.ok(took > CHANNEL_SILENT_MS, `the report took ${took} ms to arrive, more than the ${CHANNEL_SILENT_MS} ms silence`);
  assert.equal(silentAt, undefined, 'the node heard the control plane all along');
  assert.ok(got.some((m) => m.type === 'ack' && m.seq === 1));
});
