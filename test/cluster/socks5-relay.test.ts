// SOCKS5 CONNECT in a cluster takes the HTTP CONNECT's geo path: a user name asking for another
// country leaves from the node there (127.0.0.3), relayed node to node; no node up there is reply
// 0x03; the bytes count once, on the session. Real curl. UDP ASSOCIATE for a place on another node
// goes through that node's relay too (a UDP echo answers with the source address it saw), counted
// once at the entry; a destination the exit's egress policy refuses (par-1 on 127.0.0.4 is
// public-only) is dropped there, uncounted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { closed, socksRequest, udpClient } from '../dataplane/helpers/socks5-client.ts';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { writeZonesFile } from '../helpers/zones-file.ts';

let srv: RunningServer;
let ams: RunningNode;
let par: RunningNode;
let echo: UdpSocket;
let echoPort = 0;
let echoed = 0;
let web: Server;
let webPort = 0;
let owner: string;
const dirs: string[] = [];

before(async () => {
  const dir = tempDir('vad-s5-cp-');
  dirs.push(dir);
  const zonesFile = writeZonesFile(dir, ['nl-ams', 'Amsterdam', 'NL', 'amsterdam'], ['fr-par', 'Paris', 'FR', 'paris'], ['jp-tyo', 'Tokyo', 'JP', 'tokyo']);
  srv = await startServer({ zonesFile, dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: 0, egress: 'allow-all', rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = (await srv.services.data.createToken('s5geo', 'owner')).token;
  const added = await srv.services.data.addNode({ name: 'ams-1', zone: 'nl-ams', public_host: '127.0.0.3' });
  const d = tempDir('vad-s5-node-');
  dirs.push(d);
  ams = await runNode({ controls: [srv.origin], token: added.token, host: '127.0.0.3', port: 0, vlessTcpPort: null, proxyPort: 0, relayPort: 0, egress: 'allow-all', egressAddresses: ['127.0.0.3'], dataDir: d, log: silentLogger });
  const addedPar = await srv.services.data.addNode({ name: 'par-1', zone: 'fr-par', public_host: '127.0.0.4' });
  const d2 = tempDir('vad-s5-node-');
  dirs.push(d2);
  par = await runNode({ controls: [srv.origin], token: addedPar.token, host: '127.0.0.4', port: 0, vlessTcpPort: null, proxyPort: 0, relayPort: 0, egress: 'public-only', egressAddresses: ['127.0.0.4'], dataDir: d2, log: silentLogger });
  echo = createSocket('udp4');
  echo.on('message', (m, r) => {
    echoed++;
    echo.send(Buffer.concat([Buffer.from(`${r.address}|`), m]), r.port, r.address);
  });
  await new Promise<void>((r) => echo.bind(0, '127.0.0.1', () => r()));
  echoPort = echo.address().port;
  web = createServer((req, res) => res.end(req.socket.remoteAddress ?? ''));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
  webPort = (web.address() as { port: number }).port;
});
after(async () => {
  await ams?.close();
  await par?.close();
  echo?.close();
  await srv?.close();
  await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
  for (const d of dirs) removeDir(d);
});

const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);

/** curl --socks5-hostname through the serve process's proxy port (a child: the node runs in this process). */
function curl(user: string, pass: string): Promise<{ code: number; body: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '--max-time', '10', '--socks5-hostname', `127.0.0.1:${srv.proxyPort}`, '--proxy-user', `${user}:${pass}`, `http://127.0.0.1:${webPort}/where`], { encoding: 'utf8' }, (err, stdout) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, body: stdout });
    });
  });
}

test('SOCKS5 CONNECT for another country leaves from the node there, relayed; counted once; 0x03 where no node is up', async () => {
  await waitFor(async () => ((await call('GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>).find((z) => z.code === 'nl-ams')?.has_active_nodes === true, 10_000, 'ams up');
  const made = await call('POST', '/sessions', { client_id: 's5-geo', zone: 'de-fra', reusable: true });
  const id: string = made.json.id;
  assert.deepEqual(await curl(id, id), { code: 0, body: '127.0.0.1' }, 'no targeting: from the serve process itself');
  await waitFor(async () => (await curl(`${id}-cc-NL`, id)).body === '127.0.0.3', 10_000, 'relayed to ams');
  // counted once, on the session: a relayed request adds what a direct one adds ('127.0.0.3' and
  // '127.0.0.1' have the same length)
  const counters = async () => {
    const st = (await call('GET', `/sessions/${id}/status`)).json;
    return { up: st.uploaded_bytes as number, down: st.downloaded_bytes as number };
  };
  const c0 = await counters();
  assert.equal((await curl(id, id)).body, '127.0.0.1');
  await waitFor(async () => (await counters()).down > c0.down, 5000, 'the direct request counted');
  const c1 = await counters();
  assert.equal((await curl(`${id}-cc-NL`, id)).body, '127.0.0.3');
  await waitFor(async () => (await counters()).down > c1.down, 5000, 'the relayed request counted');
  const c2 = await counters();
  assert.deepEqual({ up: c2.up - c1.up, down: c2.down - c1.down }, { up: c1.up - c0.up, down: c1.down - c0.down });
  // in the catalogue, no node up: 0x03, for CONNECT and UDP ASSOCIATE
  for (const cmd of [1, 3]) {
    const r = await socksRequest(srv.proxyPort!, `${id}-cc-JP`, id, cmd, '127.0.0.1', webPort);
    assert.equal(r.reply.rep, 0x03, `command ${cmd}`);
    await closed(r.s);
  }
});

const zoneUp = async (code: string) =>
  waitFor(async () => ((await call('GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>).find((z) => z.code === code)?.has_active_nodes === true, 10_000, `${code} up`);

test('SOCKS5 UDP ASSOCIATE for another country: datagrams leave from the node there, counted once at the entry; refused at the exit: dropped, uncounted', async () => {
  await zoneUp('nl-ams');
  await zoneUp('fr-par');
  const made = await call('POST', '/sessions', { client_id: 's5-geo-udp', zone: 'de-fra', reusable: true });
  const id: string = made.json.id;
  const counters = async () => {
    const st = (await call('GET', `/sessions/${id}/status`)).json;
    return { up: st.uploaded_bytes as number, down: st.downloaded_bytes as number };
  };
  /** An association for the place, once the entry has the exit's relay route (the reporter's next round). */
  const associate = async (user: string) => {
    let got: Awaited<ReturnType<typeof socksRequest>> | undefined;
    await waitFor(async () => {
      got = await socksRequest(srv.proxyPort!, user, id, 3, '0.0.0.0', 0);
      if (got.reply.rep === 0) return true;
      await closed(got.s);
      return false;
    }, 10_000, `an association for ${user}`);
    return got!;
  };
  const { s, reply } = await associate(`${id}-cc-NL`);
  const c = await udpClient(reply.host, reply.port);
  c.send('127.0.0.1', echoPort, Buffer.from('hello'));
  const back = await c.next(5000);
  // the echo saw the exit's egress address; the answer comes from the echo's address
  assert.deepEqual(back && { ...back, payload: back.payload.toString() }, { from: '127.0.0.1', port: echoPort, payload: '127.0.0.3|hello' });
  c.send('localhost', echoPort, Buffer.from('by-name'));
  assert.equal((await c.next(5000))?.payload.toString(), '127.0.0.3|by-name');
  // a large datagram goes whole, framed
  c.send('127.0.0.1', echoPort, Buffer.alloc(60_000, 7));
  assert.equal((await c.next(5000))?.payload.length, 60_010);
  s.end();
  await closed(s);
  c.send('127.0.0.1', echoPort, Buffer.from('late'));
  assert.equal(await c.next(500), undefined, 'the association ended with its control connection');
  c.close();
  // counted once, on the session: the payloads only (5 + 7 + 60000 up, 15 + 17 + 60010 down)
  const total = { up: 60_012, down: 60_042 };
  await waitFor(async () => (await counters()).down >= total.down, 5000, 'the association counted');
  assert.deepEqual(await counters(), total);

  // par-1 (public-only) refuses a loopback destination: dropped at the exit, nothing counted
  const before = echoed;
  const r2 = await associate(`${id}-cc-FR`);
  const c2 = await udpClient(r2.reply.host, r2.reply.port);
  c2.send('127.0.0.1', echoPort, Buffer.from('refused'));
  c2.send('localhost', echoPort, Buffer.from('refused'));
  assert.equal(await c2.next(1500), undefined);
  r2.s.end();
  await closed(r2.s);
  c2.close();
  assert.equal(echoed, before, 'nothing reached the echo');
  // support sees the exit's refusal, recorded by the entry (once per name and association)
  const refusals = (await call('GET', `/sessions/${id}/refusals`)).json.refusals as Array<{ reason: string; transport: string }>;
  assert.deepEqual(refusals.filter((r) => r.reason === 'destination_forbidden').map((r) => r.transport), ['socks5']);
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(await counters(), total);
});
