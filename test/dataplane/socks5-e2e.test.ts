// SOCKS5 on the proxy port: real curl (--socks5-hostname and --socks5) to a loopback HTTP server,
// a UDP echo through UDP ASSOCIATE (the small client of helpers/socks5-client.ts), pause and speed limits, the refusals
// with their reply codes, and hostile clients closed within the header timeout with nothing counted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startFileServer, startUdpEcho, sha256, type FileServer } from './helpers/targets.ts';
import { curl } from './helpers/v2ray.ts';
import fc from 'fast-check';
import { closed, open, readN, socksAuth, socksRequest, udpClient } from './helpers/socks5-client.ts';

let h: Harness;
let files: FileServer;
let echo: Awaited<ReturnType<typeof startUdpEcho>>;

before(async () => {
  h = await startHarness(); // headerTimeoutMs 1000, egress allow-all (the test-only setting)
  files = await startFileServer({ small: 10_000, big: 1_000_000 });
  echo = await startUdpEcho();
});
after(async () => {
  await h?.close();
  await files?.close();
  await echo?.close();
});

const socks = (flag: '--socks5' | '--socks5-hostname', user: string, pass: string) => [flag, `127.0.0.1:${h.proxyPort}`, '--proxy-user', `${user}:${pass}`];

test('curl --socks5-hostname and --socks5 through the proxy port: intact, counted on the session', async () => {
  const id = h.mem.createSession({ reusable: true, client: 's5' });
  const byName = await curl([...socks('--socks5-hostname', `${id}-cc-DE-city-frankfurt`, id), `http://localhost:${files.port}/file/big`]);
  assert.equal(byName.code, 0, byName.stderr);
  assert.equal(sha256(byName.body), sha256(files.files.get('big')!));
  const byIp = await curl([...socks('--socks5', `${id}-cc-US-city-new.york`, id), files.url('/file/small')]);
  assert.equal(byIp.code, 0, byIp.stderr);
  assert.equal(sha256(byIp.body), sha256(files.files.get('small')!));
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  const row = h.mem.sessions.get(id)!;
  assert.equal(row.connections, 2);
  assert.ok(row.downloaded_bytes > 1_010_000, `downloaded ${row.downloaded_bytes}`);
  // HTTP on the same port still works
  const http = await curl(['-x', `http://${id}:${id}@127.0.0.1:${h.proxyPort}`, files.url('/file/small')]);
  assert.equal(http.code, 0, http.stderr);
  h.mem.assertNoFullIdsLogged();
});

test('UDP ASSOCIATE: datagrams echoed through the relay socket; other sources and fragments dropped', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'udp' });
  const { s, reply } = await socksRequest(h.proxyPort, id, id, 3, '0.0.0.0', 0);
  assert.equal(reply.rep, 0);
  assert.equal(reply.host, '127.0.0.1');
  const c = await udpClient(reply.host, reply.port);
  c.send('127.0.0.1', echo.port, Buffer.from('hello'));
  const back = await c.next();
  assert.deepEqual(back && { ...back, payload: back.payload.toString() }, { from: '127.0.0.1', port: echo.port, payload: 'hello' });
  // by name too
  c.send('localhost', echo.port, Buffer.from('by-name'));
  assert.equal((await c.next())?.payload.toString(), 'by-name');
  // a fragment is dropped
  c.send('127.0.0.1', echo.port, Buffer.from('frag'), 1);
  assert.equal(await c.next(300), undefined);
  // another source port is not the client's
  const other = await udpClient(reply.host, reply.port);
  other.send('127.0.0.1', echo.port, Buffer.from('intruder'));
  assert.equal(await other.next(300), undefined);
  other.close();
  assert.deepEqual(h.dp.live(id) && { up: h.dp.live(id)!.uploaded_bytes, down: h.dp.live(id)!.downloaded_bytes }, { up: 12, down: 12 });
  // support lists the association: transport socks5, the first destination it sent to, its payload bytes
  const [listed] = h.dp.connectionsOf!(id);
  assert.deepEqual(listed && [listed.transport, listed.destination, listed.uploaded_bytes, listed.downloaded_bytes], ['socks5', { host: '127.0.0.1', port: echo.port }, 12, 12]);
  // closing the control connection ends the association
  s.end();
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  c.send('127.0.0.1', echo.port, Buffer.from('late'));
  assert.equal(await c.next(300), undefined);
  c.close();
});

test('refusals: bad password (auth status 1), no-auth offer (0xFF), paused and over cap (0x02), no node there (0x03), BIND (0x07), refused port (0x05), unknown name (0x04)', async () => {
  const id = h.mem.createSession({ reusable: true, customer: 'c-s5-refuse' });
  const bad = await curl([...socks('--socks5', id, 'wrong'), files.url('/file/small')]);
  assert.match(bad.stderr, /rejected by the SOCKS5 server \(1 1\)/);
  const s = await open(h.proxyPort);
  s.write(Buffer.from([5, 1, 0]));
  assert.deepEqual([...(await readN(s, 2))], [5, 0xff]);
  await closed(s);
  const rep = async (user: string, cmd: number, host: string, port: number) => {
    const r = await socksRequest(h.proxyPort, user, id, cmd, host, port);
    await closed(r.s);
    return r.reply.rep;
  };
  assert.equal(await rep(id, 2, '127.0.0.1', files.port), 0x07, 'BIND');
  assert.equal(await rep(id, 9, '127.0.0.1', files.port), 0x07, 'unknown command');
  assert.equal(await rep(`${id}-cc-FR`, 1, '127.0.0.1', files.port), 0x03, 'a country with no zone');
  const dead = await startUdpEcho(); // a port with no TCP listener
  assert.equal(await rep(id, 1, '127.0.0.1', dead.port), 0x05);
  await dead.close();
  assert.equal(await rep(id, 1, 'no-such-host.invalid', 80), 0x04);
  h.mem.sessions.get(id)!.paused = true;
  assert.equal(await rep(id, 1, '127.0.0.1', files.port), 0x02, 'paused');
  assert.equal(await rep(id, 3, '0.0.0.0', 0), 0x02, 'paused (UDP)');
  h.mem.sessions.get(id)!.paused = false;
  const capped = h.mem.createSession({ reusable: true, customer: 'c-s5-cap' });
  h.mem.setLimits('c-s5-cap', 'session', { downloaded_bytes: 50_000 });
  const cut = await curl([...socks('--socks5', capped, capped), files.url('/file/big')]);
  assert.notEqual(cut.code, 0);
  await h.mem.waitForEvent((e) => e.sessionId === capped && e.type === 'session_end');
  const after = await curl([...socks('--socks5', capped, capped), files.url('/file/small')]);
  assert.match(after.stderr, /\(2\)|not allowed/i, after.stderr);
});

test("egress 'public-only' (the default): loopback and private destinations refused with 0x02, nothing reached", async () => {
  const strict = await startHarness({ egress: 'public-only' });
  try {
    const id = strict.mem.createSession({ reusable: true });
    const before = files.sockets.length + files.open.size;
    for (const host of ['127.0.0.1', '10.1.2.3', 'localhost']) {
      const r = await socksRequest(strict.proxyPort, id, id, 1, host, files.port);
      assert.equal(r.reply.rep, 0x02, host);
      await closed(r.s);
    }
    // UDP: the datagram to a loopback echo is dropped
    const { s, reply } = await socksRequest(strict.proxyPort, id, id, 3, '0.0.0.0', 0);
    assert.equal(reply.rep, 0);
    const c = await udpClient(reply.host, reply.port);
    c.send('127.0.0.1', echo.port, Buffer.from('x'));
    assert.equal(await c.next(300), undefined);
    c.close();
    s.destroy();
    assert.equal(files.sockets.length + files.open.size, before, 'the loopback target saw no connection');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(strict.mem.sessions.get(id)!.uploaded_bytes + strict.mem.sessions.get(id)!.downloaded_bytes, 0);
  } finally {
    await strict.close();
  }
});

test('hostile clients: a truncated greeting, a user name cut short, garbage after the greeting: closed within the header timeout, nothing counted', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'hostile' });
  const within = 1000 + 500; // the harness's header timeout, and some slack
  // a greeting that promises 5 methods and sends one
  let s = await open(h.proxyPort);
  s.write(Buffer.from([5, 5, 2]));
  let c = await closed(s);
  assert.ok(c.ms < within, `closed after ${c.ms} ms`);
  assert.equal(c.got.length, 0);
  // a user name of 255 bytes declared, 20 sent
  s = await open(h.proxyPort);
  s.write(Buffer.from([5, 1, 2]));
  assert.deepEqual([...(await readN(s, 2))], [5, 2]);
  s.write(Buffer.concat([Buffer.from([1, 255]), Buffer.alloc(20, 0x61)]));
  c = await closed(s);
  assert.ok(c.ms < within, `closed after ${c.ms} ms`);
  // a user name of 255 bytes in full: refused (status 1), closed
  s = await open(h.proxyPort);
  const auth = await socksAuth(s, 'x'.repeat(255), id);
  assert.deepEqual(auth, { ok: false, status: 1 });
  await closed(s);
  // garbage after the greeting: closed at once, no answer
  s = await open(h.proxyPort);
  s.write(Buffer.from([5, 1, 2]));
  assert.deepEqual([...(await readN(s, 2))], [5, 2]);
  s.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
  c = await closed(s);
  assert.ok(c.ms < within);
  assert.equal(c.got.length, 0);
  // a flood of handshake bytes is cut
  s = await open(h.proxyPort);
  s.on('error', () => {});
  s.write(Buffer.concat([Buffer.from([5, 255]), Buffer.alloc(4000, 2)]));
  c = await closed(s);
  assert.ok(c.ms < within);
  const row = h.mem.sessions.get(id)!;
  assert.deepEqual([row.connections, row.uploaded_bytes, row.downloaded_bytes], [0, 0, 0]);
});

test('a pause cuts a live SOCKS5 CONNECT and UDP association at once; a speed limit shapes SOCKS5 like HTTP', async () => {
  const id = h.mem.createSession({ reusable: true, customer: 'c-s5-pause' });
  const tcp = await socksRequest(h.proxyPort, id, id, 1, '127.0.0.1', files.port);
  assert.equal(tcp.reply.rep, 0);
  const udp = await socksRequest(h.proxyPort, id, id, 3, '0.0.0.0', 0);
  const c = await udpClient(udp.reply.host, udp.reply.port);
  c.send('127.0.0.1', echo.port, Buffer.from('before'));
  assert.equal((await c.next())?.payload.toString(), 'before');
  const t0 = performance.now();
  h.mem.sessions.get(id)!.paused = true;
  h.dp.pause(id);
  await Promise.all([closed(tcp.s), closed(udp.s)]);
  assert.ok(performance.now() - t0 < 500);
  c.send('127.0.0.1', echo.port, Buffer.from('after'));
  assert.equal(await c.next(300), undefined, 'the relay socket is closed');
  c.close();
  // 200 KB/s on the session: 1 MB takes about 5 s less the burst; at least 3 s
  const slow = h.mem.createSession({ reusable: true, customer: 'c-s5-speed' });
  h.mem.setLimits('c-s5-speed', 'session', { download_speed: 200_000 });
  const t1 = performance.now();
  const r = await curl([...socks('--socks5', slow, slow), files.url('/file/big')]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(performance.now() - t1 > 3000, `took ${performance.now() - t1} ms`);
});

test('arbitrary bytes after 0x05 (fast-check, 40 connections at once): each closed within the header timeout, nothing counted', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'fuzz' });
  const inputs = fc.sample(fc.uint8Array({ minLength: 0, maxLength: 2000 }), { numRuns: 40, seed: 7 });
  const t0 = performance.now();
  await Promise.all(inputs.map(async (a) => {
    const s = await open(h.proxyPort);
    s.on('error', () => {});
    s.write(Buffer.concat([Buffer.from([5]), Buffer.from(a)]));
    await closed(s);
  }));
  assert.ok(performance.now() - t0 < 1000 + 1000, `all closed after ${performance.now() - t0} ms`);
  const row = h.mem.sessions.get(id)!;
  assert.deepEqual([row.connections, row.uploaded_bytes, row.downloaded_bytes], [0, 0, 0]);
});
