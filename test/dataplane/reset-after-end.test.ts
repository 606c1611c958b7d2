// resetSocket on a socket whose end() is still shutting down. libuv refuses to reset a stream
// with a shutdown pending (EINVAL) after Node has already marked the handle closing, so a plain
// resetAndDestroy() there never closes the handle: the fd leaks and, at exit, Node's handle
// cleanup spins at 100 % CPU (the "test process spinning after its tests passed" defect). The
// connection must close either way, and a reset without a pending shutdown must stay an RST.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { resetSocket } from '../../server/dataplane/sides.ts';

async function pair(): Promise<{ client: Socket; server: Socket; close(): void }> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  const accepted = once(srv, 'connection');
  const client = connect(port, '127.0.0.1');
  await once(client, 'connect');
  const [server] = (await accepted) as [Socket];
  server.pause(); // a peer that does not read
  return { client, server, close: () => { server.destroy(); srv.close(); } };
}

const closedWithin = (s: Socket, ms: number) => new Promise<boolean>((resolve) => {
  const t = setTimeout(() => resolve(false), ms);
  s.once('close', () => { clearTimeout(t); resolve(true); });
});

test('a reset right after end() (shutdown pending) still closes the socket and its handle', async () => {
  const p = await pair();
  try {
    const errors: string[] = [];
    p.client.on('error', (e: NodeJS.ErrnoException) => errors.push(`${e.code} ${e.syscall}`));
    const closed = closedWithin(p.client, 2000);
    p.client.write('x');
    p.client.end();
    // The same tick as end(): the shutdown is issued before libuv can complete it.
    await new Promise<void>((r) => queueMicrotask(() => queueMicrotask(r)));
    resetSocket(p.client);
    assert.equal(await closed, true, `the socket never closed (errors: ${errors.join(', ') || 'none'})`);
    assert.deepEqual(errors, [], 'no EINVAL from a refused reset');
  } finally {
    p.close();
  }
});

test('a reset with no shutdown pending is an RST: the peer sees ECONNRESET', async () => {
  const p = await pair();
  try {
    p.server.resume();
    const peerError = new Promise<string>((resolve) => {
      p.server.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? '?'));
      p.server.once('end', () => resolve('end (a FIN, not a reset)'));
    });
    const closed = closedWithin(p.client, 2000);
    resetSocket(p.client);
    assert.equal(await closed, true);
    assert.equal(await peerError, 'ECONNRESET');
  } finally {
    p.close();
  }
});

test('a reset after the shutdown completed is still taken (the FIN went out, then the RST)', async () => {
  const p = await pair();
  try {
    p.client.end();
    await once(p.client, 'finish');
    const closed = closedWithin(p.client, 2000);
    resetSocket(p.client);
    assert.equal(await closed, true);
  } finally {
    p.close();
  }
});
