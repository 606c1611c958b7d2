// The geo proxy when an exit's relay cannot be reached (its node crashed or was cut off, and is
// still routed until the control plane finds it lost): the entry's real proxy (a data plane over
// in-memory deps, test/dataplane/helpers) whose places leave through real relay listeners (TLS, in
// this process), each from its own source address: DE through ams-a (127.0.0.2) and ams-b
// (127.0.0.3), US through ams-c (127.0.0.4) and ams-b, JP through ams-c alone. The destination
// answers with the source address it saw; real curl is the client, over HTTP and SOCKS5. Once ams-a
// and ams-c are cut (listener and every connection, as a crash does):
//  - a session key held on ams-c is retried through ams-b and moves (X-Proxy-Session-Moved: 1);
//  - a strict key held on ams-a fails 503 sticky_exit_gone, not a dial error;
//  - every new request, plain, CONNECT and SOCKS5, succeeds through ams-b: none fails;
//  - a place whose only exit is cut answers 502 saying the exit node could not be reached (not
//    that the destination refused), and SOCKS5 0x03.
// A relay that accepts but never completes its handshake (a hung node) counts as not reached
// after RELAY_HANDSHAKE_MS: the request goes through the other exit, later ones leave it out.
// A SOCKS5 UDP association whose exit's relay cannot be reached is opened through the other exit
// (the echo sees ams-b's address); a place whose only exit is gone answers 0x07.
// Then the same with real processes: a control plane on a throwaway PostgreSQL (its own proxy the
// entry) and two `vpn-access node run` exits of one zone; `kill -9` of one of them fails none of the
// requests made right after, and the control plane finds it lost (down) while the zone stays up.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { createSocket } from 'node:dgram';
import { createRelayServer } from '../../server/node/relay-server.ts';
import { keyExpiry, relayKey } from '../../server/dataplane/relay-grant.ts';
import { RELAY_HANDSHAKE_MS } from '../../server/dataplane/relay-tls.ts';
import { CMD_UDP_ASSOCIATE, REP } from '../../server/dataplane/socks5.ts';
import type { GeoRoute } from '../../server/dataplane/api.ts';
import { startServer } from '../../server/serve.ts';
import { pinOf } from '../../server/tls/certificates.ts';
import { silentLogger } from '../../server/log.ts';
import { startHarness, type Harness } from '../dataplane/helpers/harness.ts';
import { closed, socksRequest, udpClient } from '../dataplane/helpers/socks5-client.ts';
import { curl } from '../dataplane/helpers/v2ray.ts';
import { nodeProcess, type NodeProcess } from '../helpers/cluster-procs.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { makeCert } from '../helpers/tls.ts';
import { writeZonesFile } from '../helpers/zones-file.ts';

type Relay = ReturnType<typeof createRelayServer>;
const dir = tempDir('vad-exit-retry-');
const exp = keyExpiry();
const relays = new Map<string, { server: Relay; route: GeoRoute }>();
let h: Harness;
let web: Server;
let webPort = 0;
let session = '';

async function relay(node: string, address: string): Promise<void> {
  const pair = makeCert(dir, node);
  const tokenHash = Buffer.from(node.padEnd(32, '.')).toString('hex');
  const server = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash, entries: () => new Set(['serve']), egress: 'allow-all', egressAddresses: [address], log: silentLogger });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  relays.set(node, { server, route: { via: 'relay', node, host: '127.0.0.1', port, pcs: pinOf(new X509Certificate(pair.pem)), from: 'serve', exp, key: relayKey(tokenHash, 'serve', exp) } });
}

const PLACES: Record<string, string[]> = { DE: ['ams-a', 'ams-b'], US: ['ams-c', 'ams-b'], JP: ['ams-c'] };
const routesOf = (country: string) => (PLACES[country] ?? []).map((n) => relays.get(n)!.route);

before(async () => {
  await relay('ams-a', '127.0.0.2');
  await relay('ams-b', '127.0.0.3');
  await relay('ams-c', '127.0.0.4');
  h = await startHarness({}, { route: (country) => routesOf(country)[0] ?? null, routes: (country) => routesOf(country) });
  session = h.mem.createSession({ reusable: true, client: 'retry' });
  web = createServer((req, res) => res.end(req.socket.remoteAddress ?? ''));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
  webPort = (web.address() as { port: number }).port;
});
after(async () => {
  await h?.close();
  for (const r of relays.values()) await r.server.shutdown();
  await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
  removeDir(dir);
});

interface Answer { status: number; body: string; moved: boolean; error?: string; proxyStatus?: string }

/** One request through the entry's proxy with curl, user `<session><suffix>`; with `connect`, a CONNECT tunnel. */
async function ask(suffix: string, connect = false): Promise<Answer> {
  const r = await curl(['-v', '-x', `http://127.0.0.1:${h.proxyPort}`, '-U', `${session}${suffix}:${session}`, ...(connect ? ['-p'] : []), `http://127.0.0.1:${webPort}/where`], 10);
  const heads = r.stderr.split('\n').filter((l) => l.startsWith('< ')).map((l) => l.slice(2).trim());
  const statuses = heads.filter((l) => l.startsWith('HTTP/')).map((l) => Number(l.split(' ')[1]));
  const value = (name: string) => heads.find((l) => l.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();
  const error = value('x-proxy-error');
  const proxyStatus = value('proxy-status');
  return { status: statuses.at(-1) ?? 0, body: r.body.toString('utf8'), moved: value('x-proxy-session-moved') === '1', ...(error ? { error } : {}), ...(proxyStatus ? { proxyStatus } : {}) };
}

/** One request over SOCKS5 (curl's own client): the body, or curl's error (its exit code's words). */
async function socks(suffix: string): Promise<{ body: string; stderr: string }> {
  const r = await curl(['-x', `socks5h://${session}${suffix}:${session}@127.0.0.1:${h.proxyPort}`, `http://127.0.0.1:${webPort}/where`], 10);
  return { body: r.body.toString('utf8'), stderr: r.stderr };
}

/** A session key that the entry placed on `address` (keys land on an exit at random). */
async function keyOn(place: string, address: string, extra = ''): Promise<string> {
  for (let i = 0; i < 40; i++) {
    const key = `-cc-${place}-sessid-k${place}${i}${extra}`;
    const a = await ask(key);
    assert.equal(a.status, 200, JSON.stringify(a));
    if (a.body === address) return key;
  }
  throw new Error(`no key landed on ${address}`);
}

test('an exit that cannot be reached: requests are retried through another exit, keys move or, strict, fail; the last exit gone is 502', async () => {
  // Before: new requests rotate over both exits of DE.
  const seen = new Set<string>();
  for (let i = 0; i < 4; i++) seen.add((await ask('-cc-DE')).body);
  assert.deepEqual([...seen].sort(), ['127.0.0.2', '127.0.0.3']);
  const strictOnA = await keyOn('DE', '127.0.0.2', '-strict');
  const keyOnC = await keyOn('US', '127.0.0.4');
  assert.equal((await ask(keyOnC)).moved, false);

  // ams-a and ams-c go as a crash takes them: the listener and every connection, at once.
  await relays.get('ams-a')!.server.shutdown();
  await relays.get('ams-c')!.server.shutdown();

  // The key held on ams-c meets it gone, is retried through ams-b and moves there, and says so.
  const moved = await ask(keyOnC);
  assert.deepEqual([moved.status, moved.body, moved.moved], [200, '127.0.0.3', true], JSON.stringify(moved));
  assert.deepEqual([(await ask(keyOnC)).body, (await ask(keyOnC)).moved], ['127.0.0.3', false], 'it stays on ams-b');

  // The strict key held on ams-a: its exit cannot be reached and it may not move.
  const strict = await ask(strictOnA);
  assert.deepEqual([strict.status, strict.error], [503, 'sticky_exit_gone'], JSON.stringify(strict));

  // Every new request succeeds, through ams-b: the round that meets ams-a is retried, then ams-a is left out.
  for (const country of ['DE', 'US']) {
    for (const connect of [false, true]) {
      for (let i = 0; i < 3; i++) {
        const a = await ask(`-cc-${country}`, connect);
        assert.deepEqual([a.status, a.body], [200, '127.0.0.3'], `${country} ${connect ? 'CONNECT' : 'plain'} #${i}: ${JSON.stringify(a)}`);
      }
    }
    assert.equal((await socks(`-cc-${country}`)).body, '127.0.0.3', `${country} over SOCKS5`);
  }

  // JP leaves through ams-c alone: tried, and the answer names the exit, not the destination.
  const last = await ask('-cc-JP');
  assert.deepEqual([last.status, last.error], [502, 'bad_gateway'], JSON.stringify(last));
  assert.match(last.proxyStatus ?? '', /error=destination_unavailable; details=".*the exit node could not be reached"/);
  assert.match(JSON.parse(last.body).error.message, /the exit node could not be reached/);
  assert.match((await socks('-cc-JP')).stderr, /(unreachable|SOCKS5|0x03|\(3\))/i);
});

test('a hung exit (its relay accepts, never completes the handshake): the request goes through the other exit, later ones leave it out', async (t) => {
  const held: Socket[] = [];
  const hung = createTcpServer((sock) => {
    held.push(sock);
    sock.on('error', () => {}); // holds it, says nothing
  });
  await new Promise<void>((r) => hung.listen(0, '127.0.0.1', () => r()));
  const b = relays.get('ams-b')!.route as Extract<GeoRoute, { via: 'relay' }>;
  const silent: GeoRoute = { ...b, node: 'ams-hung', port: (hung.address() as { port: number }).port };
  const entry = await startHarness({}, { route: () => silent, routes: (country) => (country === 'DE' ? [silent, b] : []) });
  t.after(async () => {
    await entry.close();
    for (const sock of held) sock.destroy();
    await new Promise<void>((r) => hung.close(() => r()));
  });
  const id = entry.mem.createSession({ reusable: true, client: 'hung' });
  const started = Date.now();
  const answers: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await curl(['-x', `http://127.0.0.1:${entry.proxyPort}`, '-U', `${id}-cc-DE:${id}`, `http://127.0.0.1:${webPort}/where`], 15);
    answers.push(r.body.toString('utf8'));
  }
  t.diagnostic(`4 requests in ${Date.now() - started} ms (the first waited for the hung relay's handshake: RELAY_HANDSHAKE_MS, ${RELAY_HANDSHAKE_MS} ms, or the dial's time-out when shorter)`);
  assert.deepEqual(answers, Array(4).fill('127.0.0.3'));
  assert.equal(held.length, 1, 'the hung relay was tried once, then left out');
});

test('SOCKS5 UDP ASSOCIATE through an exit that cannot be reached: opened through the other exit; the place\'s only exit gone is 0x07', async (t) => {
  // ams-gone: a relay whose node crashed (its port accepts and drops every connection at once).
  let tried = 0;
  const gone = createTcpServer((sock) => {
    tried++;
    sock.destroy();
  });
  await new Promise<void>((r) => gone.listen(0, '127.0.0.1', () => r()));
  const b = relays.get('ams-b')!.route as Extract<GeoRoute, { via: 'relay' }>;
  const dead: GeoRoute = { ...b, node: 'ams-gone', port: (gone.address() as { port: number }).port };
  const entry = await startHarness({}, { route: () => dead, routes: (country) => (country === 'DE' ? [dead, b] : country === 'JP' ? [dead] : []) });
  const echo = createSocket('udp4');
  echo.on('message', (m, r) => echo.send(Buffer.concat([Buffer.from(`${r.address}|`), m]), r.port, r.address));
  await new Promise<void>((r) => echo.bind(0, '127.0.0.1', () => r()));
  t.after(async () => {
    await entry.close();
    echo.close();
    await new Promise<void>((r) => gone.close(() => r()));
  });
  const id = entry.mem.createSession({ reusable: true, client: 'udp-retry' });
  // New associations take DE's two exits in turn: whichever meets ams-gone first is opened again through ams-b.
  for (let i = 0; i < 3; i++) {
    const { s, reply } = await socksRequest(entry.proxyPort, `${id}-cc-DE`, id, CMD_UDP_ASSOCIATE, '0.0.0.0', 0);
    assert.equal(reply.rep, 0, `association #${i}: reply ${reply.rep}`);
    const c = await udpClient(reply.host, reply.port);
    c.send('127.0.0.1', echo.address().port, Buffer.from(`hello ${i}`));
    assert.equal((await c.next(5000))?.payload.toString(), `127.0.0.3|hello ${i}`, `association #${i} left from ams-b`);
    c.close();
    s.end();
    await closed(s);
  }
  assert.equal(tried, 1, 'ams-gone was tried once, then left out');
  // JP leaves through ams-gone alone: tried again (the last exit is), and refused 0x07.
  const { s, reply } = await socksRequest(entry.proxyPort, `${id}-cc-JP`, id, CMD_UDP_ASSOCIATE, '0.0.0.0', 0);
  assert.equal(reply.rep, REP.commandNotSupported);
  await closed(s);
  assert.equal(tried, 2);
});

test('kill -9 of an exit node: the requests made right after all succeed through the other; it is found lost, the zone stays up', async (t) => {
  const pg = await startPostgres(t);
  const cpDir = tempDir('vad-exit-retry-cp-');
  const srv = await startServer({ zonesFile: writeZonesFile(cpDir, ['nl-ams', 'Amsterdam', 'NL', 'amsterdam']), dataDir: cpDir, database: pg.url(), port: 0, vlessTcpPort: null, proxyPort: 0, egress: 'allow-all', rateLimit: { max: 100_000, windowMs: 60_000 } });
  const nodes: NodeProcess[] = [];
  t.after(async () => {
    for (const n of nodes) await n.stop();
    await srv.close();
    for (const d of [cpDir, ...nodes.map((n) => n.dir)]) removeDir(d);
  });
  for (const [name, host] of [['ams-a', '127.0.0.2'], ['ams-b', '127.0.0.3']]) {
    const n = await nodeProcess({ name, zone: 'nl-ams', host, database: pg.url(), controls: [srv.origin] });
    nodes.push(n);
    await n.start();
  }
  const owner = (await srv.services.data.createToken('exit-retry', 'owner')).token;
  const id: string = (await callApi(srv.baseUrl, owner, 'POST', '/sessions', { client_id: 'retry', zone: 'de-fra', reusable: true })).json.id;
  const through = async () => {
    const r = await curl(['-x', `http://127.0.0.1:${srv.proxyPort}`, '-U', `${id}-cc-NL:${id}`, `http://127.0.0.1:${webPort}/where`], 10).catch((err: Error) => ({ body: Buffer.from(`failed: ${err.message}`) }));
    return r.body.toString('utf8');
  };
  // Both exits carry (their routes reached the entry).
  const seen = new Set<string>();
  await waitFor(async () => seen.add(await through()).has('127.0.0.2') && seen.has('127.0.0.3'), 15_000, 'requests leave from both nodes');

  await nodes[0].kill9();
  const after = [];
  for (let i = 0; i < 6; i++) after.push(await through());
  assert.deepEqual(after, Array(6).fill('127.0.0.3'), 'every request right after the kill left through ams-b');

  const listed = async () => (await srv.services.data.listNodes()).map((n) => [n.name, n.up]);
  await waitFor(async () => JSON.stringify(await listed()) === JSON.stringify([['ams-a', false], ['ams-b', true]]), 8000, 'ams-a found lost');
  const zone = ((await callApi(srv.baseUrl, owner, 'GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>).find((z) => z.code === 'nl-ams');
  assert.equal(zone?.has_active_nodes, true);
  assert.equal(await through(), '127.0.0.3');
});
