// Raw-TCP VLESS half-close: a client that sends FIN (done uploading) still gets the whole
// response. The relay half-closes the outbound (the destination sees 'end') and keeps relaying
// the downlink until the destination finishes; then the client is ended.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { createHash } from 'node:crypto';
import { startHarness, type Harness } from './helpers/harness.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

let h: Harness;
before(async () => { h = await startHarness(); });
after(async () => { await h?.close(); });

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A destination that reads the whole request, and only after the request's FIN answers with
 * `reply` (after a delay) and then ends. */
async function answerAfterFin(reply: Buffer, delayMs: number): Promise<{ port: number; received: () => Buffer; sawEnd: () => boolean; close(): Promise<void> }> {
  const chunks: Buffer[] = [];
  let ended = false;
  const socks = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (s) => {
    socks.add(s);
    s.on('close', () => socks.delete(s));
    s.on('error', () => {});
    s.on('data', (b: Buffer) => chunks.push(b));
    s.on('end', () => {
      ended = true;
      setTimeout(() => s.end(reply), delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    received: () => Buffer.concat(chunks),
    sawEnd: () => ended,
    close: () => new Promise<void>((r) => { for (const s of socks) s.destroy(); server.close(() => r()); }),
  };
}

test('raw TCP: after the client half-closes, the destination sees end and the downlink keeps flowing to completion', async () => {
  const reply = Buffer.alloc(3 * 1024 * 1024 + 17);
  for (let i = 0; i < reply.length; i++) reply[i] = (i * 31 + 7) & 0xff;
  const dest = await answerAfterFin(reply, 300);
  const id = h.mem.createSession({ reusable: true });
  const request = Buffer.from('upload-then-fin '.repeat(1000));
  try {
    const s = connect({ port: h.vlessTcpPort, host: '127.0.0.1', allowHalfOpen: true });
    s.on('error', () => {});
    const got: Buffer[] = [];
    s.on('data', (b: Buffer) => got.push(b));
    const ended = new Promise<void>((r) => s.once('end', () => r()));
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write(buildVlessHeader({ id, command: 'tcp', port: dest.port, address: '127.0.0.1' }));
    s.end(request); // FIN right after the request: the client is done uploading
    const timeout = new Promise<never>((_, rej) => setTimeout(() => rej(new Error('downlink did not finish after the client half-closed')), 10000).unref());
    await Promise.race([ended, timeout]);
    const all = Buffer.concat(got);
    assert.deepEqual([...all.subarray(0, 2)], [0, 0], 'VLESS response header');
    assert.equal(all.length - 2, reply.length);
    assert.equal(sha(all.subarray(2)), sha(reply));
    assert.ok(dest.sawEnd(), 'the destination saw the half-close');
    assert.equal(sha(dest.received()), sha(request));
    s.destroy();
    await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
    const row = h.mem.sessions.get(id)!;
    assert.equal(row.uploaded_bytes, request.length);
    assert.equal(row.downloaded_bytes, reply.length);
  } finally {
    await dest.close();
  }
});
