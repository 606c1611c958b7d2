// Property-based tests at real listening sockets: random and truncated VLESS headers (raw TCP
// and WebSocket), random WebSocket frames, random proxy requests. Every connection must be
// closed by the server within a bound (no hang), the process must not crash, and no socket may
// be left open afterwards (no leak). Runs are bounded in count and time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startTcpEcho } from './helpers/targets.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

const HEADER_TIMEOUT = 300;
const BOUND = HEADER_TIMEOUT + 1500;
let h: Harness;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let sessionId: string;

const tcpHandles = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap' || r === 'TCPWRAP').length;

before(async () => {
  h = await startHarness({ headerTimeoutMs: HEADER_TIMEOUT, connectTimeoutMs: 500 });
  echo = await startTcpEcho();
  sessionId = h.mem.createSession({ reusable: true, client: 'prop' });
});
after(async () => {
  await h?.close();
  await echo?.close();
});

interface Outcome { closed: boolean; received: Buffer; ms: number }

/** Writes chunks with small gaps, then waits for the server to close (or the bound). */
function probe(port: number, chunks: Uint8Array[], prefix?: Buffer, keepOpen = true): Promise<Outcome> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const s: Socket = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ closed, received: Buffer.concat(got), ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), BOUND);
    s.on('data', (b: Buffer) => got.push(b));
    s.on('error', () => {});
    s.on('close', () => finish(true));
    s.on('connect', async () => {
      if (prefix) s.write(prefix);
      for (const c of chunks) {
        if (s.destroyed) break;
        s.write(c);
        await new Promise((r) => setTimeout(r, 2));
      }
      if (!keepOpen) s.end();
    });
  });
}

async function noLeak(baseline: number): Promise<void> {
  const deadline = performance.now() + 2000;
  while (tcpHandles() > baseline && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.ok(tcpHandles() <= baseline, `tcp handles ${tcpHandles()} > baseline ${baseline}`);
}

const chunked = (bytes: fc.Arbitrary<Uint8Array>) =>
  bytes.chain((b) => fc.array(fc.integer({ min: 1, max: Math.max(1, b.length) }), { maxLength: 6 }).map((cuts) => {
    const out: Uint8Array[] = [];
    let p = 0;
    for (const c of cuts) { if (p >= b.length) break; out.push(b.subarray(p, p + c)); p += c; }
    if (p < b.length) out.push(b.subarray(p));
    return out;
  }));

/** A valid header for our session, then truncated or with one byte changed. */
const damagedHeader = fc.record({
  cut: fc.integer({ min: 0, max: 60 }),
  flip: fc.option(fc.record({ at: fc.integer({ min: 0, max: 40 }), value: fc.integer({ min: 0, max: 255 }) }), { nil: undefined }),
  addr: fc.constantFrom('127.0.0.1', 'localhost', '::1'),
  cmd: fc.constantFrom('tcp' as const, 'udp' as const, 'mux' as const),
}).map(({ cut, flip, addr, cmd }) => {
  const full = Buffer.concat([buildVlessHeader({ id: sessionId, command: cmd, port: echo.port, address: addr }), Buffer.from('ping')]);
  const b = Buffer.from(full.subarray(0, Math.min(full.length, cut)));
  if (flip && flip.at < b.length) b[flip.at] = flip.value;
  return b;
});

test('random bytes and damaged headers at the raw TCP inbound: closed in bound, no response, no leak', async () => {
  const baseline = tcpHandles();
  await fc.assert(
    fc.asyncProperty(fc.array(chunked(fc.uint8Array({ maxLength: 700 })), { minLength: 4, maxLength: 8 }), fc.array(damagedHeader, { minLength: 4, maxLength: 8 }), async (randoms, damaged) => {
      const outs = await Promise.all([
        ...randoms.map((chunks) => probe(h.vlessTcpPort, chunks)),
        ...damaged.map((b) => probe(h.vlessTcpPort, [b], undefined, false)),
      ]);
      for (const o of outs.slice(0, randoms.length)) {
        assert.ok(o.closed, 'server did not close a random connection');
        assert.equal(o.received.length, 0, 'a refused connection got a response');
      }
      for (const o of outs.slice(randoms.length)) assert.ok(o.closed || o.received.length > 0, 'damaged header hung without closing');
    }),
    { numRuns: 12, interruptAfterTimeLimit: 20_000 },
  );
  await noLeak(baseline);
  h.mem.assertNoFullIdsLogged();
});

test('random WebSocket frames and random VLESS messages over ws: closed in bound, no leak', async () => {
  const baseline = tcpHandles();
  const upgrade = Buffer.from(`GET /vless HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  await fc.assert(
    fc.asyncProperty(fc.array(chunked(fc.uint8Array({ minLength: 1, maxLength: 300 })), { minLength: 3, maxLength: 6 }), fc.array(fc.uint8Array({ maxLength: 200 }), { minLength: 2, maxLength: 4 }), async (frames, messages) => {
      const raw = frames.map((chunks) => probe(h.wsPort, chunks, upgrade));
      const viaWs = messages.map((m) => new Promise<boolean>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${h.wsPort}/vless`);
        const t = setTimeout(() => { ws.terminate(); resolve(false); }, BOUND);
        ws.on('open', () => ws.send(m));
        ws.on('error', () => {});
        ws.on('close', () => { clearTimeout(t); resolve(true); });
      }));
      const outs = await Promise.all(raw);
      for (const o of outs) assert.ok(o.closed, 'a raw ws connection hung');
      for (const closed of await Promise.all(viaWs)) assert.ok(closed, 'a ws connection with a random message hung');
    }),
    { numRuns: 10, interruptAfterTimeLimit: 20_000 },
  );
  await noLeak(baseline);
});

const token = fc.stringMatching(/^[A-Za-z0-9:\/._\-?=&%@]{0,40}$/);
const proxyRequest = fc.oneof(
  fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)),
  // a SOCKS5 client's first byte is 0x05 (the same port serves both): random greetings and credentials
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.concat([Buffer.from([5]), b])),
  fc.record({
    method: fc.constantFrom('GET', 'CONNECT', 'POST', 'PUT', 'get', 'BREW', ''),
    target: fc.oneof(token, fc.constant(`127.0.0.1:${1}`), fc.constant('http://127.0.0.1:1/')),
    version: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2', 'x'),
    auth: fc.option(fc.oneof(token, fc.constant('Basic !!!'), fc.constant(`Basic ${Buffer.from('a:b').toString('base64')}`)), { nil: undefined }),
    headers: fc.array(fc.tuple(token, token), { maxLength: 4 }),
    end: fc.constantFrom('\r\n\r\n', '\r\n', '', '\n\n'),
  }).map((r) => Buffer.from(`${r.method} ${r.target} ${r.version}\r\n${r.auth !== undefined ? `Proxy-Authorization: ${r.auth}\r\n` : ''}${r.headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}${r.end}`)),
);

test('random proxy requests: answered or closed in bound, no leak', async () => {
  const baseline = tcpHandles();
  await fc.assert(
    fc.asyncProperty(fc.array(proxyRequest, { minLength: 4, maxLength: 10 }), async (reqs) => {
      const outs = await Promise.all(reqs.map((r) => probe(h.proxyPort, [r])));
      outs.forEach((o, i) => {
        assert.ok(o.closed, 'a proxy connection hung');
        if (!o.received.length) return;
        // SOCKS5: no acceptable method (0xFF), or user/password chosen and then refused (RFC 1929 status 1)
        if (reqs[i][0] === 5) assert.match(o.received.toString('latin1'), /^\x05(\xff|\x02(\x01\x01)?)$/);
        else assert.match(o.received.toString('latin1'), /^HTTP\/1\.1 (400|407|412|431|403|502) /);
      });
    }),
    { numRuns: 12, interruptAfterTimeLimit: 20_000 },
  );
  await noLeak(baseline);
});

test('after all that, a valid VLESS request still works', async () => {
  const o = await probe(h.vlessTcpPort, [Buffer.concat([buildVlessHeader({ id: sessionId, command: 'tcp', port: echo.port, address: '127.0.0.1' }), Buffer.from('hello')])], undefined, false);
  assert.deepEqual(o.received, Buffer.from([0, 0, ...Buffer.from('hello')]));
});

test('a valid header split byte by byte across TCP packets and across ws frames is reassembled', async () => {
  const req = Buffer.concat([buildVlessHeader({ id: sessionId, command: 'tcp', port: echo.port, address: 'localhost', addons: Buffer.from([1, 2, 3]) }), Buffer.from('split')]);
  const bytes = [...req].map((b) => Buffer.from([b]));
  const o = await probe(h.vlessTcpPort, bytes, undefined, false);
  assert.deepEqual(o.received, Buffer.concat([Buffer.from([0, 0]), Buffer.from('split')]));
  const ws = new WebSocket(`ws://127.0.0.1:${h.wsPort}/vless`);
  await new Promise((r) => ws.once('open', r));
  const got: Buffer[] = [];
  ws.on('message', (m: Buffer) => got.push(m));
  for (const b of bytes) ws.send(b);
  const deadline = performance.now() + 2000;
  while (Buffer.concat(got).length < 7 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(Buffer.concat(got), Buffer.concat([Buffer.from([0, 0]), Buffer.from('split')]));
  ws.terminate();
});
