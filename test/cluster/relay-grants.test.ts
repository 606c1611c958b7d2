// Relay grants are no bearer tokens: a real relay listener (TLS, in this process) with a real
// destination (a loopback TCP server that answers `hello` and echoes) is asked by hand-made
// request lines. A grant is made from the relay key the control plane gives an entry, for one
// session and one destination, once: used twice, for another destination, too late, with an
// expired key, by an entry no longer in the cluster, or against an exit whose token changed, it
// is refused; a grant has a kind: a TCP grant cannot open a UDP association, nor a UDP grant a
// stream; a UDP association frames datagrams both ways, leaves from the source address its slot
// picks, and the exit's egress policy refuses names. What the relay carried is tallied per entry and session hash for the reports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { readFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { createRelayServer } from '../../server/node/relay-server.ts';
import { keyExpiry, relayKey, sessionTag, signRelayGrant, signRelayRequest, verifyRelayGrant, GRANT_MS, RelayNonces } from '../../server/dataplane/relay-grant.ts';
import { createSocket } from 'node:dgram';
import { FRAME, FrameReader, encodeFrame, type Frame } from '../../server/dataplane/relay-udp-frames.ts';
import { silentLogger } from '../../server/log.ts';
import { removeDir, tempDir } from '../helpers/server.ts';
import { makeCert } from '../helpers/tls.ts';

const TOKEN_HASH = 'a'.repeat(64);
const dir = tempDir('vad-relay-grants-');
let relay: ReturnType<typeof createRelayServer>;
let relayPort = 0;
let dest: Server;
let destPort = 0;
let otherPort = 0;
let other: Server;
const entries = new Set(['node-a', 'serve']);

before(async () => {
  const pair = makeCert(dir, 'relay');
  relay = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: TOKEN_HASH, entries: () => entries, egress: 'allow-all', log: silentLogger });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  relayPort = (relay.address() as { port: number }).port;
  const listen = async (s: Server) => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return (s.address() as { port: number }).port;
  };
  dest = createServer((s) => {
    s.write('hello\n');
    s.pipe(s);
  });
  other = createServer((s) => s.end('other\n'));
  destPort = await listen(dest);
  otherPort = await listen(other);
});
after(async () => {
  await relay.shutdown();
  dest.close();
  other.close();
  removeDir(dir);
});

/** Sends one request line (and `extra`), resolves with all the relay answered until it closed. */
function ask(line: object, extra = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port: relayPort, rejectUnauthorized: false }, () => s.write(`${JSON.stringify(line)}\n${extra}`));
    let got = '';
    s.on('data', (b) => {
      got += b;
      if (got.startsWith('OK\n') && got.includes('hello\n') && (!extra || got.includes(extra))) s.end();
    });
    s.on('close', () => resolve(got));
    s.on('error', reject);
    setTimeout(() => s.destroy(), 5000);
  });
}

const keyFor = (from: string, tokenHash = TOKEN_HASH, exp = keyExpiry()) => ({ from, exp, key: relayKey(tokenHash, from, exp) });
const request = (key: ReturnType<typeof keyFor>, port = destPort, now = Date.now()) => ({ ...signRelayRequest(key, 'session-one', '127.0.0.1', port, now), host: '127.0.0.1', port });
const refusal = (answer: string) => (JSON.parse(answer.trim()) as { error: string }).error;

test('the relay negotiates TLS 1.3 with AES-128-GCM, and refuses TLS 1.2', async () => {
  const s = tlsConnect({ host: '127.0.0.1', port: relayPort, rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => s.once('secureConnect', () => resolve()).once('error', reject));
  assert.equal(s.getProtocol(), 'TLSv1.3');
  assert.equal(s.getCipher().standardName, 'TLS_AES_128_GCM_SHA256');
  s.destroy();
  // TLS 1.2 is refused: the relay lists no suite of it.
  const old = tlsConnect({ host: '127.0.0.1', port: relayPort, rejectUnauthorized: false, maxVersion: 'TLSv1.2' });
  const err = await new Promise<Error & { code?: string }>((resolve) => old.once('error', resolve).once('secureConnect', () => resolve(new Error('connected'))));
  old.destroy();
  assert.match(String(err.code), /PROTOCOL_VERSION|NO_PROTOCOLS|HANDSHAKE_FAILURE/);
});

test('a grant opens one connection to its destination; used a second time it is refused', async () => {
  const line = request(keyFor('node-a'));
  assert.equal(await ask(line, 'ping\n'), 'OK\nhello\nping\n');
  assert.equal(refusal(await ask(line)), 'replayed');
  // A fresh grant from the same key works again.
  assert.match(await ask(request(keyFor('node-a'))), /^OK\nhello\n/);
});

test('a grant made for another destination, session or entry is refused', async () => {
  const line = request(keyFor('node-a'));
  assert.equal(refusal(await ask({ ...line, port: otherPort })), 'unauthorized');
  assert.equal(refusal(await ask({ ...line, host: 'localhost' })), 'unauthorized');
  assert.equal(refusal(await ask({ ...line, session: sessionTag('session-two') })), 'unauthorized');
  assert.equal(refusal(await ask({ ...line, from: 'serve' })), 'unauthorized');
  // Not consumed by the refusals: the grant itself still opens its own destination once.
  assert.match(await ask(line), /^OK\nhello\n/);
});

test('a grant made too long ago, or from an expired key, is refused', async () => {
  assert.equal(refusal(await ask(request(keyFor('node-a'), destPort, Date.now() - GRANT_MS - 5000))), 'expired');
  assert.equal(refusal(await ask(request(keyFor('node-a'), destPort, Date.now() + GRANT_MS + 5000))), 'expired');
  const old = keyFor('node-a', TOKEN_HASH, Date.now() - 1000);
  assert.equal(refusal(await ask(request(old))), 'expired');
  // A key claiming to live far longer than the control plane makes them is refused too.
  assert.equal(refusal(await ask(request(keyFor('node-a', TOKEN_HASH, Date.now() + 3_600_000)))), 'expired');
});

test('a grant from an entry no longer in the cluster, or keyed from the exit\'s old token, is refused', async () => {
  assert.equal(refusal(await ask(request(keyFor('node-b')))), 'unauthorized');
  entries.add('node-b');
  try {
    assert.match(await ask(request(keyFor('node-b'))), /^OK\nhello\n/);
  } finally {
    entries.delete('node-b');
  }
  assert.equal(refusal(await ask(request(keyFor('node-b')))), 'unauthorized');
  assert.equal(refusal(await ask(request(keyFor('node-a', 'b'.repeat(64))))), 'unauthorized');
});

test('what the relay carried is tallied per entry and session hash, once', async () => {
  relay.takeCarried();
  const payload = 'x'.repeat(1000);
  assert.equal(await ask(request(keyFor('serve')), payload), `OK\nhello\n${payload}`);
  const carried = relay.takeCarried();
  assert.deepEqual(carried, { serve: { [sessionTag('session-one')]: { up: 1000, down: 1006 } } });
  assert.deepEqual(relay.takeCarried(), {});
});

test('the nonce set is bounded: full of live nonces, new grants are refused rather than forgotten', () => {
  const n = new RelayNonces(2);
  const t = 1_000_000;
  assert.equal(n.take('a', t), 'ok');
  assert.equal(n.take('a', t), 'replayed');
  assert.equal(n.take('b', t), 'ok');
  assert.equal(n.take('c', t), 'busy');
  // Past their keeping time they go, and room is made.
  assert.equal(n.take('c', t + 2 * GRANT_MS + 1), 'ok');
  assert.equal(n.size, 1);
});

test('grant kinds: a TCP grant replayed for UDP is refused, a UDP grant for a stream too', async () => {
  const key = keyFor('node-a');
  const tcp = request(key);
  const { host: _h, port: _p, ...tcpCreds } = tcp;
  assert.equal(refusal(await ask({ ...tcpCreds, udp: true })), 'unauthorized');
  const udp = signRelayGrant(key, 'session-one', { kind: 'udp' });
  assert.equal(refusal(await ask({ ...udp, host: '127.0.0.1', port: destPort })), 'unauthorized');
  // a request naming both is malformed
  assert.equal(refusal(await ask({ ...udp, udp: true, host: '127.0.0.1', port: destPort })), 'bad_request');
  // the same check without the listener: each kind verifies only as itself, and not consumed by refusals
  const nonces = new RelayNonces();
  const fresh = signRelayGrant(key, 'session-one', { kind: 'udp' });
  assert.equal(verifyRelayGrant(TOKEN_HASH, entries, fresh, { kind: 'tcp', host: 'udp', port: 0 }, nonces), 'unauthorized');
  assert.equal(verifyRelayGrant(TOKEN_HASH, entries, fresh, { kind: 'udp' }, nonces), 'ok');
  assert.equal(verifyRelayGrant(TOKEN_HASH, entries, fresh, { kind: 'udp' }, nonces), 'replayed');
  const t2 = signRelayGrant(key, 'session-one', { kind: 'tcp', host: '127.0.0.1', port: destPort });
  assert.equal(verifyRelayGrant(TOKEN_HASH, entries, t2, { kind: 'udp' }, nonces), 'unauthorized');
});

/** A UDP association opened by hand on a relay listener: the answer line, then frames both ways. */
async function associateBy(port: number, line: object) {
  const frames: Frame[] = [];
  const reader = new FrameReader((f) => frames.push(f));
  let head = '';
  const s = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => s.write(`${JSON.stringify(line)}\n`));
  s.on('data', (b: Buffer) => {
    if (!head.endsWith('\n')) {
      const nl = b.indexOf(0x0a);
      head += b.subarray(0, nl < 0 ? b.length : nl + 1).toString();
      if (nl < 0) return;
      b = b.subarray(nl + 1);
    }
    reader.push(b);
  });
  const until = (cond: () => boolean) => new Promise<void>((resolve) => {
    const end = Date.now() + 5000;
    const poll = () => (cond() || Date.now() > end ? resolve() : setTimeout(poll, 20));
    poll();
  });
  await until(() => head.endsWith('\n') || s.destroyed);
  return { head, frames, s, until };
}

/** A UDP echo answering `<the sender's address>|<payload>`. */
async function udpEcho() {
  const echo = createSocket('udp4');
  echo.on('message', (m, r) => echo.send(Buffer.concat([Buffer.from(`${r.address}|`), m]), r.port, r.address));
  await new Promise<void>((r) => echo.bind(0, '127.0.0.1', () => r()));
  return { echo, port: echo.address().port };
}

test('a UDP grant opens an association: a name is checked, datagrams framed both ways, tallied once', async () => {
  const { echo, port: echoPort } = await udpEcho();
  relay.takeCarried();
  const a = await associateBy(relayPort, { ...signRelayGrant(keyFor('node-a'), 'session-udp', { kind: 'udp' }), udp: true });
  try {
    assert.equal(a.head, 'OK\n');
    a.s.write(encodeFrame(FRAME.check, { host: 'localhost', port: 0 })!);
    a.s.write(encodeFrame(FRAME.data, { host: '127.0.0.1', port: echoPort }, Buffer.from('ping'))!);
    await a.until(() => a.frames.length >= 2);
    const allowed = a.frames.find((f) => f.type === FRAME.allowed);
    assert.deepEqual(allowed && [allowed.to.host, allowed.payload.toString()], ['localhost', '127.0.0.1']);
    const data = a.frames.find((f) => f.type === FRAME.data);
    assert.deepEqual(data && [data.to, data.payload.toString()], [{ host: '127.0.0.1', port: echoPort }, '127.0.0.1|ping']);
    assert.deepEqual(relay.takeCarried(), { 'node-a': { [sessionTag('session-udp')]: { up: 4, down: 14 } } });
    // a datagram over the limit is never framed
    assert.equal(encodeFrame(FRAME.data, { host: '127.0.0.1', port: echoPort }, Buffer.alloc(65508)), undefined);
  } finally {
    a.s.destroy();
    echo.close();
  }
});

test('a UDP association leaves from the source address its slot picks; the exit\'s egress policy refuses a name', async () => {
  const pair = makeCert(dir, 'relay-udp');
  const multi = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: TOKEN_HASH, entries: () => entries, egress: 'allow-all', egressAddresses: ['127.0.0.5', '127.0.0.6'], log: silentLogger });
  const pub = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: TOKEN_HASH, entries: () => entries, egress: 'public-only', log: silentLogger });
  const listen = async (s: typeof multi) => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return (s.address() as { port: number }).port;
  };
  const { echo, port: echoPort } = await udpEcho();
  try {
    const port = await listen(multi);
    for (const [slot, from] of [[1, '127.0.0.6'], [2, '127.0.0.5']] as const) {
      const a = await associateBy(port, { ...signRelayGrant(keyFor('node-a'), 'session-slot', { kind: 'udp' }), udp: true, slot });
      a.s.write(encodeFrame(FRAME.data, { host: '127.0.0.1', port: echoPort }, Buffer.from('x'))!);
      await a.until(() => a.frames.length >= 1);
      assert.equal(a.frames[0]?.payload.toString(), `${from}|x`, `slot ${slot}`);
      a.s.destroy();
    }
    const a = await associateBy(await listen(pub), { ...signRelayGrant(keyFor('node-a'), 'session-pub', { kind: 'udp' }), udp: true });
    a.s.write(encodeFrame(FRAME.check, { host: '127.0.0.1', port: 0 })!);
    a.s.write(encodeFrame(FRAME.data, { host: '127.0.0.1', port: echoPort }, Buffer.from('x'))!);
    await a.until(() => a.frames.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(a.frames.map((f) => [f.type, f.payload.toString()]), [[FRAME.refused, 'forbidden']]);
    assert.deepEqual(pub.takeCarried(), {});
    a.s.destroy();
  } finally {
    echo.close();
    await multi.shutdown();
    await pub.shutdown();
  }
});
