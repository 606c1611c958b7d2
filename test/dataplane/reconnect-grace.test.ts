// The reconnection grace: a session whose last connection closes stays
// active for reconnectGraceMs; a connection within it publishes no new session_start and the
// earlier one no session_end. After the grace the session ends once (its duration up to the last
// close); a pause or a one-shot session ends at once; the connection rate limit refuses the excess.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { startHarness, type Harness } from './helpers/harness.ts';
import { openVlessEcho, startTcpEcho } from './helpers/targets.ts';

let h: Harness;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
before(async () => {
  h = await startHarness({ reconnectGraceMs: 1000, connectionRatePerSecond: 5, connectionBurst: 10 });
  echo = await startTcpEcho();
});
after(async () => {
  await h?.close();
  await echo?.close();
});
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One echo round trip over a raw VLESS tcp connection; resolves with whether it was relayed. */
async function roundTrip(id: string, keep = false): Promise<{ ok: boolean; s: Socket }> {
  const { s, closed, got } = await openVlessEcho(h.vlessTcpPort, id, echo.port);
  if (!keep) {
    s.destroy();
    await closed;
  }
  return { ok: got() >= 4, s };
}
const types = (id: string) => h.mem.eventsOf(id).map((e) => e.type).filter((t) => t === 'session_start' || t === 'session_end');

test('a reconnection within the grace keeps the session active: one start, one end', async () => {
  const id = h.mem.createSession({ reusable: true });
  assert.ok((await roundTrip(id)).ok);
  await settle(400);
  assert.equal(h.dp.live(id)?.status, 'active', 'the session stays active during the grace');
  assert.equal(h.dp.live(id)?.open_connections, 0);
  assert.ok((await roundTrip(id)).ok);
  await settle(400);
  assert.ok((await roundTrip(id)).ok);
  assert.deepEqual(types(id), ['session_start']);
  const t0 = performance.now();
  const end = await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end', 3000);
  assert.ok(end.at - t0 >= 800, 'the session ended before the grace was over');
  assert.deepEqual(types(id), ['session_start', 'session_end']);
  assert.equal(h.mem.sessions.get(id)!.status, 'idle');
  assert.equal(h.mem.sessions.get(id)!.connections, 3);
  assert.ok(h.mem.sessions.get(id)!.duration <= 1, 'the duration counted the grace after the last close');
  // after the grace, a new connection is a new start
  assert.ok((await roundTrip(id)).ok);
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end' && e.id > end.id, 3000);
  assert.deepEqual(types(id), ['session_start', 'session_end', 'session_start', 'session_end']);
});

test('a pause during the grace ends the session at once; a one-shot session has no grace', async () => {
  const id = h.mem.createSession({ reusable: true });
  assert.ok((await roundTrip(id)).ok);
  await settle(100);
  h.mem.sessions.get(id)!.paused = true;
  const t0 = performance.now();
  h.dp.pause(id);
  const end = await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end', 1000);
  assert.ok(end.at - t0 < 100);
  const once = h.mem.createSession({ reusable: false });
  assert.ok((await roundTrip(once)).ok);
  const t1 = performance.now();
  const end2 = await h.mem.waitForEvent((e) => e.sessionId === once && e.type === 'session_end', 1000);
  assert.ok(end2.at - t1 < 200);
  assert.equal(h.mem.sessions.get(once)!.status, 'ended');
});

test('new connections over the session\'s connection rate are refused (burst 10, 5 per second)', async () => {
  const id = h.mem.createSession({ reusable: true });
  const results: boolean[] = [];
  for (let i = 0; i < 20; i++) results.push((await roundTrip(id)).ok);
  const admitted = results.filter(Boolean).length;
  assert.ok(admitted >= 10 && admitted <= 13, `${admitted} of 20 admitted`);
  assert.equal(results[0], true);
  assert.equal(results[19], false);
  await settle(1000); // ~5 tokens back
  assert.ok((await roundTrip(id)).ok, 'the rate refills');
  const warned = h.mem.logs.filter((l) => /connection rate/.test(String(l.msg)));
  assert.equal(warned.length, 1, 'the refusals are logged once, not per connection');
});
