// Backpressure end to end: a client that stops reading must stall the destination, not make
// the server buffer the whole download.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { WebSocket } from 'ws';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startFileServer, type FileServer } from './helpers/targets.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

const MB = 1024 * 1024;
let h: Harness;
let files: FileServer;
before(async () => {
  h = await startHarness();
  files = await startFileServer({ huge: 96 * MB });
});
after(async () => {
  await h?.close();
  await files?.close();
});

const request = (id: string) => Buffer.concat([
  buildVlessHeader({ id, command: 'tcp', port: files.port, address: '127.0.0.1' }),
  Buffer.from('GET /file/huge HTTP/1.1\r\nHost: x\r\n\r\n'),
]);
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('raw TCP: a client that does not read stalls the transfer (bounded buffering)', async () => {
  const id = h.mem.createSession({ reusable: true });
  const s = connect(h.vlessTcpPort, '127.0.0.1');
  s.on('error', () => {});
  s.pause();
  s.write(request(id));
  await settle(1500);
  const a = h.dp.live(id)!.downloaded_bytes;
  await settle(500);
  const b = h.dp.live(id)!.downloaded_bytes;
  assert.equal(a, b, 'the transfer kept flowing to a client that does not read');
  assert.ok(a < 40 * MB, `server moved ${a} bytes to a client that reads nothing`);
  // reading again resumes it
  let got = 0;
  s.on('data', (d: Buffer) => { got += d.length; });
  s.resume();
  await settle(500);
  assert.ok(h.dp.live(id)!.downloaded_bytes > b);
  s.destroy();
});

test('WebSocket: a client that does not read stalls the transfer (bufferedAmount bound)', async () => {
  const id = h.mem.createSession({ reusable: true });
  const ws = new WebSocket(`ws://127.0.0.1:${h.wsPort}/vless`);
  await new Promise((r) => ws.once('open', r));
  ws.send(request(id));
  ws.pause();
  await settle(1500);
  const a = h.dp.live(id)!.downloaded_bytes;
  await settle(500);
  assert.equal(h.dp.live(id)!.downloaded_bytes, a);
  assert.ok(a < 40 * MB, `server moved ${a} bytes to a ws client that reads nothing`);
  ws.resume();
  await settle(500);
  assert.ok(h.dp.live(id)!.downloaded_bytes > a);
  ws.terminate();
});
