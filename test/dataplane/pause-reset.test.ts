// Pause and byte caps reset the client's connection, so what sits in the socket buffers is
// dropped rather than delivered: a client that reads slower than the source receives at most a
// small bound after the pause (measured before the fix: ~7 MB kept arriving from the kernel's
// send buffer and the relay's queue after a graceful close). What had already reached the client's
// own socket before the pause (its kernel receive queue, its stream buffer) is the client's and is
// not counted: how much that is depends on the kernel's receive-window tuning, not on the relay.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { WebSocket } from 'ws';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startFileServer, type FileServer } from './helpers/targets.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

const KiB = 1024;
const MB = 1024 * KiB;
/** Most a slow reader may still receive once its session is paused or capped. */
const AFTER_CUT_BOUND = 256 * KiB;
let h: Harness;
let files: FileServer;
before(async () => {
  h = await startHarness();
  files = await startFileServer({ huge: 64 * MB });
});
after(async () => {
  await h?.close();
  await files?.close();
});

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const request = (id: string) => Buffer.concat([
  buildVlessHeader({ id, command: 'tcp', port: files.port, address: '127.0.0.1' }),
  Buffer.from('GET /file/huge HTTP/1.1\r\nHost: x\r\n\r\n'),
]);

async function waitDownloaded(id: string, bytes: number): Promise<void> {
  const end = performance.now() + 10_000;
  while ((h.dp.live(id)?.downloaded_bytes ?? 0) < bytes) {
    if (performance.now() > end) throw new Error('the download did not start');
    await settle(20);
  }
}

/** Bytes in the kernel receive queue of this process's IPv4 socket on `localPort` (Linux). */
function kernelQueued(s: Socket): number {
  const port = s.localPort!.toString(16).toUpperCase().padStart(4, '0');
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(`:${port}`)) return parseInt(f[4]!.split(':')[1]!, 16);
  }
  throw new Error(`no socket on local port ${s.localPort} in /proc/net/tcp`);
}

/** A raw VLESS tcp client that reads ~16 KiB every 10 ms (~1.6 MB/s), slower than the source. */
test('raw TCP: a slow reader receives less than 256 KiB after its session is paused', async () => {
  const id = h.mem.createSession({ reusable: true });
  const s = connect(h.vlessTcpPort, '127.0.0.1');
  s.on('error', () => {});
  s.pause();
  let received = 0;
  let closed = false;
  s.once('close', () => { closed = true; });
  const reader = setInterval(() => {
    for (let i = 0; i < 4; i++) {
      const b = s.read(4096) as Buffer | null;
      if (!b) break;
      received += b.length;
    }
  }, 10);
  s.write(request(id));
  await waitDownloaded(id, 4 * MB);
  h.mem.sessions.get(id)!.paused = true;
  // both ends are in this process and nothing of it runs between these lines; on loopback the
  // kernel moves bytes inside the two ends' own system calls (a zero-window probe aside), so what
  // the client holds at the pause is its reads, its stream buffer and its kernel queue
  const atPause = received + s.readableLength + kernelQueued(s);
  h.dp.pause(id);
  const end = performance.now() + 15_000;
  while (!closed && performance.now() < end) await settle(20);
  // whatever is still readable after the close
  for (let b = s.read() as Buffer | null; b; b = s.read() as Buffer | null) received += b.length;
  clearInterval(reader);
  s.destroy();
  const after = received - atPause;
  process.stdout.write(`# after-pause bytes: ${after} (${atPause} held or read by the client at the pause)\n`);
  assert.ok(closed, 'the connection was not closed');
  assert.ok(after < AFTER_CUT_BOUND, `the client received ${after} bytes after the pause`);
});

test('WebSocket: a slow reader receives less than 256 KiB after its session is paused', async () => {
  const id = h.mem.createSession({ reusable: true });
  const ws = new WebSocket(`ws://127.0.0.1:${h.wsPort}/vless`);
  ws.on('error', () => {});
  await new Promise((r) => ws.once('open', r));
  let received = 0;
  let closed = false;
  ws.on('message', (d: Buffer) => { received += d.length; });
  ws.once('close', () => { closed = true; });
  ws.send(request(id));
  // slow consumer: read for 5 ms out of every 50
  const reader = setInterval(() => {
    ws.resume();
    setTimeout(() => { if (!closed) ws.pause(); }, 5);
  }, 50);
  ws.pause();
  await waitDownloaded(id, 4 * MB);
  h.mem.sessions.get(id)!.paused = true;
  const atPause = received;
  h.dp.pause(id);
  const end = performance.now() + 15_000;
  while (!closed && performance.now() < end) await settle(20);
  clearInterval(reader);
  const after = received - atPause;
  process.stdout.write(`# after-pause bytes: ${after}\n`);
  ws.terminate();
  assert.ok(closed, 'the connection was not closed');
  assert.ok(after < AFTER_CUT_BOUND, `the ws client received ${after} bytes after the pause`);
});
