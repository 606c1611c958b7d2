// The metering rule of the proxy port (docs/proxy.md, "What counts"), checked to the byte through
// the real API: the counters GET /v2/sessions/{id}/status gives after one exchange against the
// bytes the client saw on the wire (and, for an absolute-URI request, the bytes the destination
// received: the request as relayed). HTTP absolute-URI GET, HTTP CONNECT, SOCKS5 CONNECT, SOCKS5 UDP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { startUdpEcho } from './helpers/targets.ts';
import { closed, open, readN, socksRequest, udpClient } from './helpers/socks5-client.ts';
import { writeZonesFile } from '../helpers/zones-file.ts';

let srv: RunningServer;
let owner: string;
let dir: string;
let target: Server;
let targetPort = 0;
/** What each of the target's sockets read and wrote, once closed. */
const targetSockets: { read: number; written: number }[] = [];
let echo: Awaited<ReturnType<typeof startUdpEcho>>;
const BANNER = randomBytes(777);
const BODY = randomBytes(12_345);

before(async () => {
  dir = tempDir('vad-meter-');
  const zonesFile = writeZonesFile(dir);
  srv = await startServer({ zonesFile, dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: 0, egress: 'allow-all', rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = (await srv.services.data.createToken('meter', 'owner')).token;
  // An HTTP request (a head starting with GET) gets an answer whose head the proxy rewrites
  // (Keep-Alive, Connection: keep-alive); anything else gets the banner, then its echo.
  target = createServer((s: Socket) => {
    s.on('error', () => {});
    s.once('close', () => targetSockets.push({ read: s.bytesRead, written: s.bytesWritten }));
    s.once('data', (b: Buffer) => {
      if (b.subarray(0, 4).toString() === 'GET ') {
        s.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n`), BODY]));
        return;
      }
      s.write(b);
      s.pipe(s);
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  targetPort = (target.address() as { port: number }).port;
  echo = await startUdpEcho();
});
after(async () => {
  await srv?.close();
  await new Promise<void>((r) => (target ? target.close(() => r()) : r()));
  await echo?.close();
  removeDir(dir);
});

async function newSession(): Promise<string> {
  const made = await callApi(srv.baseUrl, owner, 'POST', '/sessions', { client_id: 'meter', zone: 'de-fra', reusable: false });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  return made.json.id;
}

/** The session's counters once its one connection has closed and it ended. */
async function countersOf(id: string): Promise<{ up: number; down: number }> {
  let st: { status: string; uploaded_bytes: number; downloaded_bytes: number } | undefined;
  await waitFor(async () => {
    st = (await callApi(srv.baseUrl, owner, 'GET', `/sessions/${id}/status`, undefined)).json;
    return st?.status === 'ended';
  }, 10_000, 'the session ended');
  return { up: st!.uploaded_bytes, down: st!.downloaded_bytes };
}

/** Reads everything until the peer closes. */
function readAll(s: Socket): Promise<Buffer> {
  return closed(s).then((c) => c.got);
}

const basic = (id: string) => `Proxy-Authorization: Basic ${Buffer.from(`${id}:${id}`).toString('base64')}`;

test('HTTP absolute-URI GET: up = the request as relayed to the destination, down = the answer as the client got it (heads included)', async () => {
  const id = await newSession();
  const s = await open(srv.proxyPort!);
  const before = targetSockets.length;
  s.write(`GET http://127.0.0.1:${targetPort}/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\n${basic(id)}\r\nProxy-Connection: keep-alive\r\nUser-Agent: meter\r\n\r\n`);
  const got = await readAll(s);
  assert.match(got.toString('latin1'), /^HTTP\/1\.1 200 OK\r\n/);
  assert.ok(got.subarray(-BODY.length).equals(BODY));
  assert.doesNotMatch(got.toString('latin1'), /Keep-Alive: timeout/, 'the answer head was rewritten');
  await waitFor(() => targetSockets.length > before, 5000, 'the target socket closed');
  const seen = targetSockets[before];
  const c = await countersOf(id);
  assert.deepEqual(c, { up: seen.read, down: got.length });
});

/** n random bytes through the open tunnel `s` to the echo and back, then closed: the session counts exactly the payload both ways. */
async function echoCounted(s: Socket, id: string, n: number): Promise<void> {
  const sent = randomBytes(n);
  s.write(sent);
  const back = await readN(s, sent.length);
  assert.ok(back.equals(sent));
  s.end();
  await closed(s);
  assert.deepEqual(await countersOf(id), { up: sent.length, down: back.length });
}

test('HTTP CONNECT: the tunnel bytes both ways, not the CONNECT request nor its 200 answer', async () => {
  const id = await newSession();
  const s = await open(srv.proxyPort!);
  s.write(`CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\n${basic(id)}\r\n\r\n`);
  const established = Buffer.from('HTTP/1.1 200 Connection Established\r\n\r\n');
  assert.ok((await readN(s, established.length)).equals(established));
  await echoCounted(s, id, 5000);
});

test('SOCKS5 CONNECT: the payload both ways, not the handshake', async () => {
  const id = await newSession();
  const { s, reply } = await socksRequest(srv.proxyPort!, `${id}-cc-DE`, id, 1, '127.0.0.1', targetPort);
  assert.equal(reply.rep, 0);
  await echoCounted(s, id, 7000);
});

test('SOCKS5 UDP: the datagrams\' payload both ways, not the SOCKS UDP header', async () => {
  const id = await newSession();
  const { s, reply } = await socksRequest(srv.proxyPort!, id, id, 3, '0.0.0.0', 0);
  assert.equal(reply.rep, 0);
  const c = await udpClient(reply.host, reply.port);
  let wireUp = 0, payloadUp = 0, wireDown = 0, payloadDown = 0;
  for (const size of [1, 100, 1400, 9000]) {
    const p = randomBytes(size);
    c.send('127.0.0.1', echo.port, p);
    wireUp += 10 + size; // RSV(2) FRAG ATYP(1) IPv4(4) PORT(2) + payload
    payloadUp += size;
    const back = await c.next();
    assert.ok(back?.payload.equals(p));
    wireDown += 10 + back!.payload.length;
    payloadDown += back!.payload.length;
  }
  c.close();
  s.end();
  await closed(s);
  assert.ok(wireUp > payloadUp && wireDown > payloadDown);
  assert.deepEqual(await countersOf(id), { up: payloadUp, down: payloadDown });
});
