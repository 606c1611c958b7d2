// The multiplexed relay: a real relay listener (TLS, in this process) and real loopback
// destinations, dialled by the entry's own dialRelay, or by hand over HTTP/2:
//  - many requests, at once and one after another, ride one TLS connection, each relayed intact;
//  - each stream carries a grant of its own: replayed, for another destination or from another
//    entry it is refused, and the connection goes on serving the streams that are granted;
//  - a connection whose first stream is not granted is closed, as a refused request line is;
//  - streams have their own flow control: a stream nobody reads does not hold the others, and its
//    bytes arrive intact once read; an upload is echoed intact;
//  - a session that just moved a bulk download takes connections of its own for a while (cheaper
//    per byte), other sessions still streams;
//  - a connection that stopped carrying (a path gone silent) is dropped once a stream and a PING
//    go unanswered, and the next request opens another;
//  - the exit's egress policy refuses a destination as an egress refusal at the entry;
//  - a relay that offers no HTTP/2 (an older node) is dialled a connection per request.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { createRelayServer } from '../../server/node/relay-server.ts';
import { dialRelay } from '../../server/dataplane/relay-dial.ts';
import { EgressRefused } from '../../server/dataplane/egress.ts';
import { keyExpiry, relayKey, signRelayRequest } from '../../server/dataplane/relay-grant.ts';
import { pinOf } from '../../server/tls/certificates.ts';
import { silentLogger } from '../../server/log.ts';
import { pseudoRandomBytes, sha256 } from '../helpers/bytes.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { makeCert } from '../helpers/tls.ts';

const TOKEN_HASH = 'c'.repeat(64);
const dir = tempDir('vad-relay-mux-');
const pair = makeCert(dir, 'mux');
const pcs = pinOf(new X509Certificate(pair.pem));
const entries = new Set(['node-a', 'node-b']);
/** 24 MiB and a bit of pseudo-random bytes: more than every window on the way. */
const BIG = pseudoRandomBytes(24 * 1024 * 1024 + 4321, 7);
const sha = sha256;

let relay: ReturnType<typeof createRelayServer>;
let relayPort = 0;
/** TLS connections the relay accepted. */
let accepted = 0;
let echo: Server;
let big: Server;
let hello: Server;
let echoPort = 0;
let helloPort = 0;
let bigPort = 0;

async function listen(s: Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((r) => s.listen(0, host, () => r()));
  return (s.address() as { port: number }).port;
}

before(async () => {
  relay = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: TOKEN_HASH, entries: () => entries, egress: 'allow-all', log: silentLogger });
  relay.on('connection', () => accepted++);
  relayPort = await listen(relay);
  echo = createServer((s) => s.on('error', () => {}).pipe(s));
  big = createServer((s) => s.on('error', () => {}).end(BIG));
  hello = createServer((s) => s.on('error', () => {}).end('hello\n'));
  echoPort = await listen(echo);
  helloPort = await listen(hello);
  bigPort = await listen(big);
});
after(async () => {
  await relay.shutdown();
  echo.close();
  big.close();
  hello.close();
  removeDir(dir);
});

const exp = keyExpiry();
const route = (from = 'node-a', port = relayPort) => ({ via: 'relay' as const, node: 'exit', host: '127.0.0.1', port, pcs, from, exp, key: relayKey(TOKEN_HASH, from, exp) });

/** Everything a relayed outbound sends until it ends (after writing `send`, then ending its side). */
function drain(out: Socket, send?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    out.on('data', (b: Buffer) => got.push(b));
    out.on('end', () => resolve(Buffer.concat(got)));
    out.on('error', reject);
    if (send) {
      out.write(send);
      out.end();
    }
  });
}

test('requests at once and one after another ride one TLS connection, each relayed intact', async () => {
  const before = accepted;
  const one = async (i: number) => drain(await dialRelay(route(), 'session-one', '127.0.0.1', echoPort, 5000), Buffer.from(`request ${i}\n`.repeat(100)));
  const atOnce = await Promise.all(Array.from({ length: 40 }, (_, i) => one(i)));
  atOnce.forEach((got, i) => assert.equal(got.toString(), `request ${i}\n`.repeat(100)));
  for (let i = 0; i < 10; i++) assert.equal((await one(i)).toString(), `request ${i}\n`.repeat(100));
  assert.equal(accepted - before, 1, 'one TLS connection carried every request');
  // Another entry in this process gets a connection of its own (a connection is one entry's).
  assert.equal((await drain(await dialRelay(route('node-b'), 'session-two', '127.0.0.1', echoPort, 5000), Buffer.from('b\n'))).toString(), 'b\n');
  assert.equal(accepted - before, 2);
});

test('a stream nobody reads holds only itself; its bytes and an upload arrive intact', async () => {
  const stalled = await dialRelay(route(), 'session-one', '127.0.0.1', bigPort, 5000);
  stalled.pause();
  // Meanwhile the same connection carries other streams, both ways.
  const [down, up] = await Promise.all([
    dialRelay(route(), 'session-one', '127.0.0.1', bigPort, 5000).then((s) => drain(s)),
    dialRelay(route(), 'session-one', '127.0.0.1', echoPort, 5000).then((s) => drain(s, BIG)),
  ]);
  assert.equal(sha(down), sha(BIG), 'a download next to a stalled stream arrived intact');
  assert.equal(sha(up), sha(BIG), 'an upload came back intact');
  const late = drain(stalled);
  stalled.resume();
  assert.equal(sha(await late), sha(BIG), 'the stalled stream\'s bytes arrived intact once read');
});

/** A download through dialRelay whose reads go to `onData` (as the proxy's do): all it read. */
async function download(sessionId: string, port = bigPort): Promise<Buffer> {
  const got: Buffer[] = [];
  const out = await dialRelay(route(), sessionId, '127.0.0.1', port, 5000, (b, release) => {
    got.push(Buffer.from(b));
    release();
  });
  out.once('end', () => out.end());
  await new Promise((r) => out.once('close', r));
  return Buffer.concat(got);
}

test('a session that just moved a bulk download takes connections of its own to that exit; other sessions still streams', async () => {
  await drain(await dialRelay(route(), 'bulk-session', '127.0.0.1', echoPort, 5000), Buffer.from('warm\n'));
  let before = accepted;
  assert.equal(sha(await download('bulk-session')), sha(BIG), 'the first download is a stream');
  assert.equal(accepted - before, 0);
  before = accepted;
  assert.equal(sha(await download('bulk-session')), sha(BIG));
  assert.equal((await download('bulk-session', helloPort)).toString(), 'hello\n');
  assert.equal(accepted - before, 2, 'then a connection of its own per request');
  before = accepted;
  assert.equal((await download('other-session', helloPort)).toString(), 'hello\n');
  assert.equal(accepted - before, 0, 'another session still rides the stream connection');
});

/** An HTTP/2 connection to the relay by hand (the pin is the test's own certificate). */
async function session(): Promise<{ h2: ClientHttp2Session; tls: TLSSocket }> {
  const tls = tlsConnect({ host: '127.0.0.1', port: relayPort, rejectUnauthorized: false, ALPNProtocols: ['h2'] });
  await new Promise((r) => tls.once('secureConnect', r));
  assert.equal(tls.alpnProtocol, 'h2');
  const h2 = h2connect(`https://127.0.0.1:${relayPort}`, { createConnection: () => tls });
  h2.on('error', () => {});
  return { h2, tls };
}

/** One stream with `request` in its header: the status and error it was answered, and what the destination sent. */
function ask(h2: ClientHttp2Session, request: object, send = 'ping\n'): Promise<{ status: number; error?: string; body: string }> {
  return new Promise((resolve) => {
    const s = h2.request({ ':method': 'POST', ':path': '/relay', 'vad-relay': JSON.stringify(request) }, { endStream: false });
    let status = 0;
    let error: string | undefined;
    let body = '';
    s.on('response', (h) => {
      status = Number(h[':status']);
      error = h['vad-error'] as string | undefined;
      if (status === 200) s.end(send);
    });
    s.on('data', (b: Buffer) => (body += b));
    s.on('error', () => {});
    s.on('close', () => resolve({ status, ...(error ? { error } : {}), body }));
  });
}

const grant = (from = 'node-a', port = echoPort, host = '127.0.0.1') => ({ ...signRelayRequest(route(from), 'session-one', host, port), host, port });

test('each stream is granted on its own: replayed, for another destination or from another entry it is refused, and the connection goes on', async () => {
  const { h2, tls } = await session();
  const first = grant();
  assert.deepEqual(await ask(h2, first), { status: 200, body: 'ping\n' });
  assert.deepEqual(await ask(h2, first), { status: 403, error: 'replayed', body: '' });
  assert.deepEqual(await ask(h2, { ...grant(), port: bigPort }), { status: 403, error: 'unauthorized', body: '' });
  assert.deepEqual(await ask(h2, grant('node-b')), { status: 400, error: 'bad_request', body: '' }, 'the connection is node-a\'s');
  assert.deepEqual(await ask(h2, { ...grant(), udp: true }), { status: 400, error: 'bad_request', body: '' });
  assert.deepEqual(await ask(h2, grant()), { status: 200, body: 'ping\n' }, 'still served');
  // A destination nothing listens on: answered, and the connection goes on.
  const nothing = createServer();
  const closedPort = await listen(nothing);
  await new Promise((r) => nothing.close(r));
  assert.deepEqual(await ask(h2, grant('node-a', closedPort)), { status: 502, error: 'unreachable', body: '' });
  assert.deepEqual(await ask(h2, grant()), { status: 200, body: 'ping\n' });
  assert.equal(tls.destroyed, false);
  h2.close();
});

test('a connection whose first stream is not granted is closed', async () => {
  const { h2, tls } = await session();
  const madeUp = { ...grant(), grant: '0'.repeat(64) };
  assert.deepEqual(await ask(h2, madeUp), { status: 403, error: 'unauthorized', body: '' });
  await new Promise((r) => (tls.destroyed ? r(null) : tls.once('close', r)));
  assert.equal(h2.destroyed || h2.closed, true);
});

test('a connection gone silent is dropped after an unanswered stream and PING; the next request opens another', async () => {
  // A TCP forwarder in front of the relay whose connections can be frozen: kept open, carrying
  // nothing more (as a path gone silent); connections made after that are carried.
  const held: Array<{ frozen: boolean; sockets: Socket[] }> = [];
  const path = createServer((a) => {
    const b = createConnection(relayPort, '127.0.0.1');
    const conn = { frozen: false, sockets: [a, b] };
    held.push(conn);
    for (const [from, to] of [[a, b], [b, a]] as const) {
      from.on('error', () => {});
      from.on('data', (d: Buffer) => (conn.frozen ? undefined : to.write(d)));
      from.on('close', () => to.destroy());
    }
  });
  const port = await listen(path);
  const via = route('node-a', port);
  const before = accepted;
  assert.equal((await drain(await dialRelay(via, 'session-one', '127.0.0.1', echoPort, 5000), Buffer.from('one\n'))).toString(), 'one\n');
  for (const c of held) c.frozen = true;
  await assert.rejects(dialRelay(via, 'session-one', '127.0.0.1', echoPort, 500), /did not answer in time/);
  // The PING goes unanswered too: within 5 s the connection is dropped, and a new one is carried.
  await waitFor(async () => {
    try {
      return (await drain(await dialRelay(via, 'session-one', '127.0.0.1', echoPort, 1000), Buffer.from('two\n'))).toString() === 'two\n';
    } catch {
      return false;
    }
  }, 15_000, 'a request through a new connection');
  assert.equal(accepted - before, 2, 'the silent connection was replaced by one new one');
  for (const c of held) for (const s of c.sockets) s.destroy();
  path.close();
});

test('the exit\'s egress policy refuses a destination: an egress refusal at the entry', async () => {
  const strict = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: TOKEN_HASH, entries: () => entries, egress: 'public-only', log: silentLogger });
  const port = await listen(strict);
  await assert.rejects(dialRelay(route('node-a', port), 'session-one', '127.0.0.1', echoPort, 5000), (err) => err instanceof EgressRefused);
  await strict.shutdown();
});

test('a relay that offers no HTTP/2 is dialled a connection per request', async () => {
  // An older node: one request line, `OK`, then the destination (here: an echo of its own).
  let connections = 0;
  const old = createTlsServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), ALPNProtocols: ['vad-relay'] }, (s) => {
    connections++;
    s.once('data', (b: Buffer) => {
      const nl = b.indexOf(0x0a);
      s.write('OK\n');
      s.write(b.subarray(nl + 1));
      s.pipe(s);
    });
  });
  const port = await listen(old);
  const dial = async (i: number) => (await drain(await dialRelay(route('node-a', port), 'session-one', '127.0.0.1', 9, 5000), Buffer.from(`old ${i}\n`))).toString();
  // The first dial asks for HTTP/2, is told no, and makes a connection of its own.
  assert.equal(await dial(0), 'old 0\n');
  for (let i = 1; i < 4; i++) {
    const before = connections;
    assert.equal(await dial(i), `old ${i}\n`);
    assert.equal(connections - before, 1, 'one connection per request, none asking for HTTP/2 first');
  }
  old.close();
});
