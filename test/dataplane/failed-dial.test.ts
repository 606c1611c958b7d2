// A dial that fails does not use up a session: a destination refused by the egress policy, a
// name that does not resolve, a DNS server that never answers and a refused connection leave a
// one-shot session unused (no connection counted, no events, status still `created`) and do not
// count toward max_reconnections. DNS lookups are bounded by the data plane's DNS timeout.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startTcpEcho, freePort } from './helpers/targets.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

let h: Harness;
let strict: Harness;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
/** A DNS server that reads every query and never answers. */
const silentDns = createSocket('udp4');
let dnsQueries = 0;

before(async () => {
  silentDns.on('message', () => { dnsQueries++; });
  await new Promise<void>((r) => silentDns.bind(0, '127.0.0.1', () => r()));
  const resolver = new Resolver({ timeout: 60_000, tries: 1 });
  resolver.setServers([`127.0.0.1:${silentDns.address().port}`]);
  h = await startHarness({
    connectTimeoutMs: 10_000,
    dnsTimeoutMs: 500,
    // names ending in .silent go to the DNS server that never answers; .invalid fails at once
    dnsLookup: async (name) => {
      if (name.endsWith('.invalid')) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      if (name.endsWith('.silent')) return { address: (await resolver.resolve4(name))[0], family: 4 };
      return { address: '127.0.0.1', family: 4 };
    },
  });
  strict = await startHarness({ egress: 'public-only' });
  echo = await startTcpEcho();
});
after(async () => {
  await h?.close();
  await strict?.close();
  await echo?.close();
  silentDns.close();
});

/** Opens a raw VLESS tcp connection to host:port, sends `payload`; resolves with what came back
 *  and how long until the server closed it. */
function attempt(hh: Harness, id: string, address: string, port: number, payload = Buffer.from('ping')): Promise<{ got: Buffer; ms: number; s: Socket }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const s = connect(hh.vlessTcpPort, '127.0.0.1');
    const got: Buffer[] = [];
    s.on('error', () => {});
    s.on('data', (b: Buffer) => {
      got.push(b);
      if (Buffer.concat(got).length >= 2 + payload.length) resolve({ got: Buffer.concat(got), ms: performance.now() - t0, s });
    });
    s.on('close', () => resolve({ got: Buffer.concat(got), ms: performance.now() - t0, s }));
    s.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port, address }), payload]));
  });
}

test('failed dials (refused connection, unknown name, silent DNS) do not use up a one-shot session', async () => {
  const id = h.mem.createSession({ reusable: false, client: 'k-dial' });
  const closedPort = await freePort();
  const refused = await attempt(h, id, '127.0.0.1', closedPort);
  assert.equal(refused.got.length, 0);
  const unknown = await attempt(h, id, 'nowhere.invalid', echo.port);
  assert.equal(unknown.got.length, 0);
  const silent = await attempt(h, id, 'blackhole.silent', echo.port);
  assert.equal(silent.got.length, 0);
  assert.ok(dnsQueries >= 1, 'the injected lookup asked the silent DNS server');
  assert.ok(silent.ms < 2500, `a DNS lookup that never answers was given up after ${Math.round(silent.ms)} ms (DNS timeout 500 ms)`);
  const row = h.mem.sessions.get(id)!;
  assert.equal(row.connections, 0, 'a failed dial was counted');
  assert.equal(row.status, 'created');
  assert.deepEqual(h.mem.eventsOf(id).map((e) => e.type), [], 'a failed dial published events');
  // the session is still good for its one connection
  const ok = await attempt(h, id, 'echo.example', echo.port);
  assert.equal(ok.got.subarray(2).toString(), 'ping');
  ok.s.destroy();
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  assert.equal(h.mem.sessions.get(id)!.connections, 1);
  assert.equal(h.mem.sessions.get(id)!.status, 'ended');
});

test('a destination refused by the egress policy does not use up a one-shot session', async () => {
  const id = strict.mem.createSession({ reusable: false });
  const r = await attempt(strict, id, '127.0.0.1', echo.port);
  assert.equal(r.got.length, 0);
  assert.equal(strict.mem.sessions.get(id)!.connections, 0);
  assert.equal(strict.mem.sessions.get(id)!.status, 'created');
  assert.deepEqual(strict.mem.eventsOf(id), []);
});

test('failed dials do not count toward max_reconnections', async () => {
  const customer = 'c-recon';
  h.mem.setLimits(customer, 'client', { max_reconnections: 0 });
  const id = h.mem.createSession({ reusable: true, customer });
  const closedPort = await freePort();
  for (let i = 0; i < 3; i++) assert.equal((await attempt(h, id, '127.0.0.1', closedPort)).got.length, 0);
  const ok = await attempt(h, id, '127.0.0.1', echo.port);
  assert.equal(ok.got.subarray(2).toString(), 'ping', 'the one allowed connection was used up by failed dials');
  ok.s.destroy();
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  assert.equal(h.mem.sessions.get(id)!.connections, 1);
});
