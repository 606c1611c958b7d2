// Slow clients: the API port bounds how long a client may take to send its
// headers and its whole request, and how long an idle keep-alive connection stays open; an
// event stream (a long response, not a long request) and VLESS over ws (an upgraded socket)
// are not cut by any of them. Timeouts are configured short here so the bounds are seconds. What
// the HTTP parser refuses (a timeout, oversized headers, bytes that are not HTTP) is the error record.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { resolveConfig } from '../../server/http/config.ts';
import { openRaw } from '../helpers/sse.ts';
import { listen, type TestListening } from '../helpers/server.ts';

const TIMEOUTS = { headersMs: 1000, requestMs: 2000, keepAliveMs: 1500, idleMs: 10_000, checkIntervalMs: 250 };

/** Opens a raw socket to the server and collects what it answers; `closed` resolves with the time it closed. */
function rawClient(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8').on('data', (c: string) => (text += c));
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
    socket.once('error', () => {});
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

/** Writes `bytes` one at a time, every `everyMs`, until the socket closes or all are sent. */
async function trickle(socket: Socket, bytes: string, everyMs: number, closed: Promise<number>): Promise<number> {
  let sent = 0;
  let done = false;
  void closed.then(() => (done = true));
  for (const b of bytes) {
    if (done || socket.destroyed) break;
    socket.write(b);
    sent++;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return sent;
}

describe('slow clients on the API port', () => {
  let s: TestListening;
  before(async () => {
    s = await listen({ httpTimeouts: TIMEOUTS, sse: { keepAliveMs: 300 } });
  });
  after(async () => {
    await s.stop();
  });

  test('a body sent one byte a second is cut within the request timeout (408, connection closed)', async () => {
    const c = await rawClient(s.apiPort);
    const t0 = Date.now();
    const body = JSON.stringify({ client_id: 'slow-loris-with-a-long-name', zone_id: 'us' }).padEnd(60, ' ');
    c.socket.write(`POST /v2/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.owner}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    const sent = await trickle(c.socket, body, 1000, c.closed);
    const closedAt = await Promise.race([c.closed, new Promise<number>((r) => setTimeout(() => r(-1), 2000))]);
    assert.notEqual(closedAt, -1, `still open after ${sent} bytes over ${Date.now() - t0} ms`);
    const bound = TIMEOUTS.requestMs + TIMEOUTS.checkIntervalMs + 1500; // + scheduling slack
    assert.ok(closedAt - t0 <= bound, `closed after ${closedAt - t0} ms (bound ${bound} ms)`);
    assert.ok(sent < body.length, 'the body was never completed');
    assert.match(c.received(), /^HTTP\/1\.1 408/);
    // The error record, as every other answer.
    const answer = JSON.parse(c.received().slice(c.received().indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string; details: object } };
    assert.deepEqual(answer, { error: { code: 'request_timeout', message: 'The request was not received in time; send it again.', details: {} } });
  });

  test('what the HTTP parser refuses before a request exists answers the error record: headers past 16 KiB (431), bytes that are not HTTP (400)', async () => {
    const cases: [string, number, string][] = [
      [`GET /v2/zones HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`, 431, 'request_header_too_large'],
      ['GARBAGE\r\n\r\n', 400, 'invalid_request'],
      ['GET /v2/zones HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'invalid_request'],
      ['GET /v2/zones HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n', 400, 'invalid_request'],
    ];
    for (const [raw, status, code] of cases) {
      const c = await rawClient(s.apiPort);
      c.socket.end(raw);
      await Promise.race([c.closed, new Promise((r) => setTimeout(r, 3000))]);
      const text = c.received();
      assert.match(text, new RegExp(`^HTTP/1\\.1 ${status} `), text.slice(0, 200));
      assert.match(text, /\r\nContent-Type: application\/json; charset=utf-8\r\n/);
      assert.match(text, /\r\nConnection: close\r\n/);
      const answer = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string; details: object } };
      assert.equal(answer.error.code, code);
      assert.ok(answer.error.message.length > 10);
      assert.deepEqual(answer.error.details, {});
    }
  });

  test('headers sent one byte every 200 ms are cut within the headers timeout', async () => {
    const c = await rawClient(s.apiPort);
    const t0 = Date.now();
    await trickle(c.socket, `GET /v2/zones HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.owner}\r\nX-Padding: ${'p'.repeat(80)}\r\n\r\n`, 200, c.closed);
    const closedAt = await Promise.race([c.closed, new Promise<number>((r) => setTimeout(() => r(-1), 2000))]);
    assert.notEqual(closedAt, -1, 'still open');
    const bound = TIMEOUTS.headersMs + TIMEOUTS.checkIntervalMs + 1500;
    assert.ok(closedAt - t0 <= bound, `closed after ${closedAt - t0} ms (bound ${bound} ms)`);
    assert.doesNotMatch(c.received(), /^HTTP\/1\.1 200/);
  });

  test('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const c = await rawClient(s.apiPort);
    c.socket.write(`GET /v2/zones HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.owner}\r\n\r\n`);
    const t0 = Date.now();
    const closedAt = await Promise.race([c.closed, new Promise<number>((r) => setTimeout(() => r(-1), TIMEOUTS.keepAliveMs + 4000))]);
    assert.match(c.received(), /^HTTP\/1\.1 200/);
    assert.notEqual(closedAt, -1, 'the idle connection was kept open');
    assert.ok(closedAt - t0 >= TIMEOUTS.keepAliveMs - 200, `closed too early: ${closedAt - t0} ms`);
  });

  test('an event stream outlives every timeout (three request timeouts, still delivering)', async () => {
    const stream = await openRaw(`${s.baseUrl}/sessions/events`, { authorization: `Bearer ${s.owner}` });
    assert.equal(stream.status, 200);
    let ended = false;
    void stream.ended.then(() => (ended = true));
    await new Promise((r) => setTimeout(r, TIMEOUTS.requestMs * 3));
    assert.equal(ended, false, 'the stream was cut');
    const before = stream.text().length;
    await new Promise((r) => setTimeout(r, 800));
    assert.ok(stream.text().length > before, 'keep-alive comments still arrive');
    stream.close();
  });
});

describe('upgraded sockets (VLESS over ws)', () => {
  let s: TestListening;
  before(async () => {
    // The real data plane, which takes the ws upgrade on the API port.
    s = await listen({ dataPlane: undefined, httpTimeouts: TIMEOUTS });
  });
  after(async () => {
    await s.stop();
  });

  test('a ws upgrade on the API port is not cut by the request or headers timeout', async () => {
    const c = await rawClient(s.apiPort);
    c.socket.write(
      'GET /vless HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.match(c.received(), /^HTTP\/1\.1 101/);
    const closedAt = await Promise.race([c.closed, new Promise<number>((r) => setTimeout(() => r(-1), TIMEOUTS.requestMs * 2))]);
    // The data plane's own VLESS header deadline may close it; the HTTP timeouts must not.
    assert.ok(closedAt === -1 || !/HTTP\/1\.1 408/.test(c.received()), c.received());
    c.socket.destroy();
  });
});

test('defaults: headers 10 s, request 30 s, keep-alive 65 s, idle 120 s, checked every 5 s', () => {
  const tls = { current: null, status: { enabled: false } } as unknown as Parameters<typeof resolveConfig>[2];
  const config = resolveConfig({ dataDir: '/nonexistent' }, '0', tls);
  assert.deepEqual(config.httpTimeouts, { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 65_000, idleMs: 120_000, checkIntervalMs: 5000 });
});
