// Relayed connections do not live for ever: an idle timeout (v2ray's connIdle, shortened here),
// WebSocket pings with a pong deadline, TCP keep-alive on both sides, and a cap on a session's
// open connections. A client that vanishes without a FIN frees its session: the session goes
// idle, its duration stops, and its max_sessions slot is free again.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { execFileSync } from 'node:child_process';
import { WebSocket } from 'ws';
import { startHarness, type Harness } from './helpers/harness.ts';
import { openVlessEcho, startTcpEcho } from './helpers/targets.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';
import type { DataPlaneConfig } from '../../server/dataplane/api.ts';

const echo = await startTcpEcho();
const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.close();
  await echo.close();
});
async function harness(config: Partial<DataPlaneConfig>): Promise<Harness> {
  const h = await startHarness(config);
  harnesses.push(h);
  return h;
}
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw VLESS tcp connection to the echo server, answered once. */
const openEcho = (h: Harness, id: string) => openVlessEcho(h.vlessTcpPort, id, echo.port);

test('a vanished raw TCP client (no FIN, no bytes) is cut after the idle timeout: the session goes idle, its duration stops, its max_sessions slot is freed', async () => {
  const h = await harness({ idleTimeoutMs: 800 });
  const customer = 'c-idle';
  h.mem.setLimits(customer, 'client', { max_sessions: 1 });
  const a = h.mem.createSession({ customer, client: 'k', reusable: true });
  const b = h.mem.createSession({ customer, client: 'k', reusable: true });
  const ca = await openEcho(h, a);
  assert.equal(ca.got(), 4);
  ca.s.pause(); // the client vanishes: it neither reads, writes nor closes
  const blocked = await openEcho(h, b);
  assert.equal(blocked.got(), 0, 'max_sessions 1: the second session is refused while the first is active');
  const t0 = performance.now();
  const end = await h.mem.waitForEvent((e) => e.sessionId === a && e.type === 'session_end', 8000);
  assert.ok(end.at - t0 < 6000);
  assert.equal(h.mem.sessions.get(a)!.status, 'idle');
  const d1 = h.mem.sessions.get(a)!.duration;
  await settle(1200);
  assert.equal(h.mem.sessions.get(a)!.duration, d1, 'the duration kept counting after the client vanished');
  assert.equal(h.dp.live(a)?.open_connections ?? 0, 0);
  const cb = await openEcho(h, b);
  assert.equal(cb.got(), 4, 'the max_sessions slot was not freed');
  cb.s.destroy();
  ca.s.destroy();
});

test('a WebSocket client that stops answering pings is cut; one that answers stays', async () => {
  const h = await harness({ idleTimeoutMs: 60_000, wsPingIntervalMs: 300 });
  const open = async (id: string) => {
    const ws = new WebSocket(`ws://127.0.0.1:${h.wsPort}/vless`);
    ws.on('error', () => {});
    await new Promise((r) => ws.once('open', r));
    let got = 0;
    ws.on('message', (d: Buffer) => { got += d.length; });
    ws.send(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echo.port, address: '127.0.0.1' }), Buffer.from('hi')]));
    const end = performance.now() + 3000;
    while (got < 4 && performance.now() < end) await settle(10);
    assert.equal(got, 4);
    return ws;
  };
  const silentId = h.mem.createSession({ reusable: true, client: 'silent' });
  const aliveId = h.mem.createSession({ reusable: true, client: 'alive' });
  const silent = await open(silentId);
  const alive = await open(aliveId);
  // the silent client's socket stops reading: the server's pings go unanswered
  (silent as unknown as { _socket: Socket })._socket.pause();
  await h.mem.waitForEvent((e) => e.sessionId === silentId && e.type === 'session_end', 5000);
  assert.equal(h.mem.sessions.get(silentId)!.status, 'idle');
  assert.equal(h.dp.live(aliveId)?.open_connections, 1, 'a client answering pings was cut');
  assert.equal(alive.readyState, WebSocket.OPEN);
  alive.terminate();
  silent.terminate();
});

test('TCP keep-alive is on for the client side and the destination side', async () => {
  const h = await harness({});
  const id = h.mem.createSession({ reusable: true });
  const c = await openEcho(h, id);
  assert.equal(c.got(), 4);
  await settle(100);
  // ss columns: Recv-Q Send-Q Local Peer [timer:(...)]
  const rows = execFileSync('ss', ['-tno', 'state', 'established'], { encoding: 'utf8' }).split('\n').slice(1).map((l) => l.trim().split(/\s+/));
  const row = (local: string, peer: string) => rows.find((r) => r[2] === local && r[3] === peer)?.join(' ');
  const clientSide = row(`127.0.0.1:${h.vlessTcpPort}`, `127.0.0.1:${c.s.localPort}`);
  assert.ok(clientSide, 'the server side of the client connection is listed');
  assert.match(clientSide, /timer:\(keepalive/, `no keep-alive on the client side: ${clientSide}`);
  const destSide = rows.filter((r) => r[3] === `127.0.0.1:${echo.port}`).map((r) => r.join(' '));
  assert.equal(destSide.length, 1, `one outbound connection to the destination: ${destSide.join(' | ')}`);
  assert.match(destSide[0], /timer:\(keepalive/, `no keep-alive on the destination side: ${destSide[0]}`);
  c.s.destroy();
});

test('a session holds at most maxConnectionsPerSession open connections; over it the new one is refused', async () => {
  const h = await harness({ maxConnectionsPerSession: 3 });
  const id = h.mem.createSession({ reusable: true });
  const conns = [await openEcho(h, id), await openEcho(h, id), await openEcho(h, id)];
  for (const c of conns) assert.equal(c.got(), 4);
  const fourth = await openEcho(h, id);
  assert.equal(fourth.got(), 0, 'a fourth open connection was admitted');
  await fourth.closed;
  conns[0].s.destroy();
  await conns[0].closed;
  await settle(50);
  const again = await openEcho(h, id);
  assert.equal(again.got(), 4, 'a connection was refused below the cap');
  for (const c of [...conns, again]) c.s.destroy();
});
