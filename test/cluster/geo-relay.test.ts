// The geo proxy acts in a cluster: a proxy request whose user name says `-cc-NL` or
// `-cc-US-city-new.york` leaves the cluster from an up node in that country or city, relayed node
// to node (TLS, the exit's certificate pinned, a grant from the control plane) when it entered
// elsewhere; 412 when no node is up there; the traffic is counted once, on the session.
// Real curl is the client; the destination is a loopback HTTP server that answers with the source
// address it saw, so the test sees which node the request left from (each node's egress address).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { callApi } from '../helpers/http.ts';
import { pseudoRandomBytes, sha256 } from '../helpers/bytes.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { keyExpiry, relayKey, signRelayRequest } from '../../server/dataplane/relay-grant.ts';
import { writeZonesFile } from '../helpers/zones-file.ts';

let srv: RunningServer;
let sao: RunningNode;
let ams: RunningNode;
let nyc: RunningNode;
let web: Server;
let webPort = 0;
let owner: string;
const dirs: string[] = [];

before(async () => {
  const dir = tempDir('vad-geo-cp-');
  dirs.push(dir);
  // Only Frankfurt is the serve process's own (`local`); the other zones are served by nodes alone.
  const zonesFile = writeZonesFile(dir,
    ['br-sao', 'São Paulo', 'BR', 'sao paulo'], ['nl-ams', 'Amsterdam', 'NL', 'amsterdam'], ['us-nyc', 'New York', 'US', 'new york'],
    ['us-lax', 'Los Angeles', 'US', 'los angeles'], ['jp-tyo', 'Tokyo', 'JP', 'tokyo'],
  );
  srv = await startServer({ zonesFile, dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: 0, egress: 'allow-all', rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = (await srv.services.data.createToken('geo', 'owner')).token;
  const node = async (name: string, zone: string, host: string) => {
    const added = await srv.services.data.addNode({ name, zone, public_host: host });
    const d = tempDir('vad-geo-node-');
    dirs.push(d);
    return runNode({ controls: [srv.origin], token: added.token, host, port: 0, vlessTcpPort: null, proxyPort: 0, relayPort: 0, egress: 'allow-all', egressAddresses: [host], dataDir: d, log: silentLogger });
  };
  sao = await node('sao-1', 'br-sao', '127.0.0.2');
  ams = await node('ams-1', 'nl-ams', '127.0.0.3');
  nyc = await node('nyc-1', 'us-nyc', '127.0.0.4');
  web = createServer((req, res) => {
    if (req.url === '/big') {
      res.setHeader('content-length', String(BIG.length));
      return void res.end(BIG);
    }
    res.setHeader('content-type', 'text/plain');
    res.end(req.socket.remoteAddress ?? '');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
  webPort = (web.address() as { port: number }).port;
});
after(async () => {
  for (const n of [sao, ams, nyc]) await n?.close();
  await srv?.close();
  await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
  for (const d of dirs) removeDir(d);
});

const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);

/** What the destination answers at /big: 6 MiB and a bit of pseudo-random bytes (no two records of the relay's TLS alike). */
const BIG = pseudoRandomBytes(6 * 1024 * 1024 + 12_345, 1);
const sha = sha256;

/** /big through the São Paulo node's proxy, in a CONNECT tunnel or as a plain request (`slow`: read at 4 MB/s): the body curl got. */
function fetchBig(user: string, pass: string, tunnel: boolean, slow = false): Promise<Buffer> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '--max-time', '30', ...(tunnel ? ['-p'] : []), ...(slow ? ['--limit-rate', '4M'] : []), '-x', `http://127.0.0.2:${sao.ports.proxy_port}`, '-U', `${user}:${pass}`, `http://127.0.0.1:${webPort}/big`], { encoding: 'buffer', maxBuffer: 64 << 20 }, (_err, stdout) => resolve(stdout));
  });
}

/**
 * curl through a proxy (a child process: the nodes run in this process, so it must not block);
 * resolves with the HTTP status and the body (the source address the destination saw).
 */
function curl(proxyHost: string, proxyPort: number, user: string, pass: string): Promise<{ code: number; body: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '--max-time', '10', '-x', `http://${proxyHost}:${proxyPort}`, '-U', `${user}:${pass}`, '-w', '\n%{http_code}', `http://127.0.0.1:${webPort}/where`], { encoding: 'utf8' }, (_err, stdout) => {
      const lines = stdout.trim().split('\n');
      resolve({ code: Number(lines.at(-1)), body: lines.slice(0, -1).join('\n') });
    });
  });
}

/** Counters of a session once the node's reports have settled (equal over two reads 1.2 s apart). */
async function settled(id: string): Promise<{ up: number; down: number }> {
  let last = '';
  for (let i = 0; i < 20; i++) {
    const st = (await call('GET', `/sessions/${id}/status`)).json;
    const now = JSON.stringify({ up: st.uploaded_bytes, down: st.downloaded_bytes });
    if (now === last) return JSON.parse(now);
    last = now;
    await new Promise((r) => setTimeout(r, 1200));
  }
  throw new Error(`the counters of ${id.slice(0, 8)} did not settle`);
}

/** What `run` adds to the session's counters, once reported. */
async function delta(id: string, run: () => Promise<void>): Promise<{ up: number; down: number }> {
  const before = await settled(id);
  await run();
  await waitFor(async () => (await call('GET', `/sessions/${id}/status`)).json.downloaded_bytes > before.down, 10_000, 'the request was counted');
  const after = await settled(id);
  return { up: after.up - before.up, down: after.down - before.down };
}

test('a proxy request for another country leaves from the node there, relayed; the bytes count once on the session', async () => {
  await waitFor(async () => {
    const zones = (await call('GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>;
    return ['br-sao', 'nl-ams', 'us-nyc'].every((c) => zones.find((z) => z.code === c)?.has_active_nodes);
  }, 10_000, 'three nodes up');
  const made = await call('POST', '/sessions', { client_id: 'geo-alice', zone: 'br-sao', reusable: true });
  assert.equal(made.json.configuration.address, '127.0.0.2');
  const id: string = made.json.id;
  // The entry node learns the session and the other nodes' relays from its state.
  await waitFor(async () => (await curl('127.0.0.2', sao.ports.proxy_port!, id, id)).code === 200, 10_000, 'sao serves the session');
  // No targeting: it leaves from the entry node itself.
  assert.deepEqual(await curl('127.0.0.2', sao.ports.proxy_port!, id, id), { code: 200, body: '127.0.0.2' });
  // A country: relayed to the node in the Netherlands, leaving from its address.
  await waitFor(async () => (await curl('127.0.0.2', sao.ports.proxy_port!, `${id}-cc-NL`, id)).body === '127.0.0.3', 10_000, 'relayed to ams');
  // A country and a city.
  assert.deepEqual(await curl('127.0.0.2', sao.ports.proxy_port!, `${id}-cc-US-city-new.york`, id), { code: 200, body: '127.0.0.4' });
  // Its own country leaves from here.
  assert.deepEqual(await curl('127.0.0.2', sao.ports.proxy_port!, `${id}-cc-BR`, id), { code: 200, body: '127.0.0.2' });
  // In the catalogue, but no node up there: 412.
  assert.equal((await curl('127.0.0.2', sao.ports.proxy_port!, `${id}-cc-US-city-los.angeles`, id)).code, 412);
  assert.equal((await curl('127.0.0.2', sao.ports.proxy_port!, `${id}-cc-JP`, id)).code, 412);

  // Counted once, on the session (the entry): a relayed request adds exactly what the same
  // request leaving from the entry itself adds (its answer, '127.0.0.3' or '127.0.0.2', has the
  // same length); counted twice it would add double, counted at the exit alone nothing.
  const direct = await delta(id, async () => assert.equal((await curl('127.0.0.2', sao.ports.proxy_port!, id, id)).body, '127.0.0.2'));
  const relayed = await delta(id, async () => assert.equal((await curl('127.0.0.2', sao.ports.proxy_port!, `${id}-cc-NL`, id)).body, '127.0.0.3'));
  assert.ok(direct.down > 50, `the direct answer was counted: ${direct.down} bytes`);
  assert.deepEqual(relayed, direct, 'a relayed request counts what a direct one does, once');
  const sessions = (await call('GET', '/sessions?client_id=geo-alice')).json.sessions as unknown[];
  assert.equal(sessions.length, 1);
});

test('the serve process\'s own proxy relays to a node too; a relay refuses a request without a valid grant', async () => {
  // de-fra lists `local`: the serve process is the exit for Germany itself; New York is a node's,
  // relayed; Japan has no node: 412 from the serve proxy as from a node.
  const made = await call('POST', '/sessions', { client_id: 'geo-bob', zone: 'de-fra', reusable: true });
  const id: string = made.json.id;
  const local = srv.proxyPort!;
  assert.ok(local, 'the serve process has a proxy');
  assert.deepEqual(await curl('127.0.0.1', local, `${id}-cc-DE`, id), { code: 200, body: '127.0.0.1' });
  await waitFor(async () => (await curl('127.0.0.1', local, `${id}-cc-US-city-new.york`, id)).body === '127.0.0.4', 10_000, 'serve relays to nyc');
  assert.equal((await curl('127.0.0.1', local, `${id}-cc-US-city-los.angeles`, id)).code, 412);
  assert.equal((await curl('127.0.0.1', local, `${id}-cc-JP`, id)).code, 412);

  // The relay listener: a made-up grant is refused before anything is dialled.
  const madeUp = { from: 'serve', exp: Date.now() + 60_000, session: '0'.repeat(32), nonce: '1'.repeat(32), time: Date.now(), grant: '0'.repeat(64), host: '127.0.0.1', port: webPort };
  assert.equal(await askRelay(ams.ports.relay_port!, madeUp), '{"error":"unauthorized"}');
});

// Before the last test: what these carry is in the exits' reports it compares with sao's counters.
test('large relayed downloads arrive intact, four at once, tunnelled or not, one read slowly, and count what the same downloads leaving from the entry do', async () => {
  const made = await call('POST', '/sessions', { client_id: 'geo-carol', zone: 'br-sao', reusable: true });
  const id: string = made.json.id;
  await waitFor(async () => (await curl('127.0.0.2', sao.ports.proxy_port!, `${id}-cc-NL`, id)).body === '127.0.0.3', 10_000, 'relayed to ams');
  const four = async (user: string) => {
    // At once: the entry's read buffers are shared by its connections and recycled between them;
    // the slow reader's chunks wait in the entry while the others' buffers come and go.
    const got = await Promise.all([true, false, true, false].map((tunnel, i) => fetchBig(user, id, tunnel, i === 0)));
    for (const b of got) {
      assert.equal(b.length, BIG.length);
      assert.equal(sha(b), sha(BIG), 'the bytes arrived as the destination sent them');
    }
  };
  const direct = await delta(id, () => four(id));
  const relayed = await delta(id, () => four(`${id}-cc-NL`));
  assert.ok(direct.down > 4 * BIG.length, `the direct downloads were counted: ${direct.down} bytes`);
  assert.deepEqual(relayed, direct, 'relayed downloads count what direct ones do, once');
});

/** One request line to a node's relay listener (127.0.0.3: ams); resolves with the answer until it closed. */
function askRelay(port: number, line: object): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.3', port, rejectUnauthorized: false }, () => s.write(`${JSON.stringify(line)}\n`));
    let got = '';
    s.on('data', (b) => {
      got += b;
      if (got.startsWith('OK\n')) s.end();
    });
    s.on('close', () => resolve(got.trim().split('\n')[0]));
    s.on('error', reject);
  });
}

test('a node\'s relay refuses grants from a node once it is removed; exits report what they carried, per entry', async (t) => {
  const exit = (await srv.services.data.relayNodes()).find((n) => n.name === 'ams-1')!;
  // A node of the cluster (it need not run): a grant made from the key the control plane would
  // give it is accepted by ams, once its state lists the node.
  const { node: gone } = await srv.services.data.addNode({ name: 'gone-1', zone: 'br-sao', public_host: '127.0.0.9' });
  const grant = () => {
    const exp = keyExpiry();
    return { ...signRelayRequest({ from: gone.id, exp, key: relayKey(exit.token_hash, gone.id, exp) }, 'some-session', '127.0.0.1', webPort), host: '127.0.0.1', port: webPort };
  };
  await waitFor(async () => (await askRelay(ams.ports.relay_port!, grant())) === 'OK', 10_000, 'ams accepts the new node\'s grants');
  await srv.services.data.removeNode('gone-1');
  await waitFor(async () => (await askRelay(ams.ports.relay_port!, grant())) === '{"error":"unauthorized"}', 5000, 'ams refuses the removed node\'s grants');

  // The relayed requests of the tests before were carried by ams and nyc for sao and serve, and
  // reported to the control plane (vad_relay_carried_bytes_total, by entry).
  const sao1 = (await srv.services.data.listNodes()).find((n) => n.name === 'sao-1')!;
  await waitFor(async () => {
    const text = await srv.services.metrics.registry.getSingleMetricAsString('vad_relay_carried_bytes_total');
    return text.includes(`entry="${sao1.id}"`) && text.includes('entry="serve"');
  }, 10_000, 'the exits reported what they carried');
  // And compared with what sao counted on its sessions (10 s late): an honest entry shows no
  // more than a few bytes of rewritten answer headers unreported.
  await new Promise((r) => setTimeout(r, 11_000));
  const gauge = await srv.services.metrics.registry.getSingleMetric('vad_relay_unreported_bytes')!.get();
  const unreported = gauge.values.find((v) => v.labels.entry === sao1.id)?.value;
  t.diagnostic(`carried for sao beyond what it counted: ${unreported} bytes`);
  assert.ok(unreported !== undefined && unreported < 1024, `unreported for sao: ${unreported}`);
});
