// curl through the geo-targeted HTTP proxy: CONNECT and absolute-URI, 407, 412, counting,
// events and limits shared with VLESS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startFileServer, sha256, type FileServer } from './helpers/targets.ts';
import { curl } from './helpers/v2ray.ts';
import { connect } from 'node:net';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

const MB = 1024 * 1024;
let h: Harness;
let files: FileServer;

before(async () => {
  h = await startHarness();
  files = await startFileServer({ big: 2 * MB, small: 10_000 });
});
after(async () => {
  await h?.close();
  await files?.close();
});

const proxy = (user: string, pass: string) => ['-x', `http://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@127.0.0.1:${h.proxyPort}`];

test('absolute-URI request through the proxy: intact, counted exactly, start/stats/end events', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'px' });
  const before = files.sockets.length;
  const r = await curl([...proxy(`${id}-cc-DE-city-frankfurt`, id), files.url('/file/big')]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(sha256(r.body), sha256(files.files.get('big')!));
  const end = await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  await new Promise((res) => setTimeout(res, 50));
  const moved = files.sockets.slice(before);
  assert.equal(moved.length, 1);
  assert.equal(end.downloaded_bytes, moved[0].written);
  assert.equal(end.uploaded_bytes, moved[0].read);
  assert.deepEqual(h.mem.eventsOf(id).map((e) => e.type).slice(-2), ['session_stats', 'session_end']);
  assert.equal(h.mem.eventsOf(id)[0].type, 'session_start');
  assert.equal(h.mem.sessions.get(id)!.status, 'idle');
});

test('CONNECT tunnel through the proxy with a city in another country zone', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'px2' });
  const r = await curl(['-p', ...proxy(`${id}-cc-US-city-new.york`, id), files.url('/file/small')]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(sha256(r.body), sha256(files.files.get('small')!));
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  assert.ok(h.mem.sessions.get(id)!.downloaded_bytes > 10_000);
});

test('407 without, or with bad, credentials; 412 for an unknown country or city', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'px3' });
  const status = async (args: string[]) => {
    const r = await curl(['-D', '-', ...args, files.url('/file/small')]);
    const text = r.body.toString('latin1');
    return { code: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text };
  };
  const none = await status(['-x', `http://127.0.0.1:${h.proxyPort}`]);
  assert.equal(none.code, 407);
  assert.match(none.text, /Proxy-Authenticate: Basic realm="vpn-access"/);
  assert.match(none.text, /"code":"proxy_auth_required"/);
  assert.equal((await status(proxy(id, 'wrong'))).code, 407);
  assert.equal((await status(proxy('00000000-0000-4000-8000-000000000000', '00000000-0000-4000-8000-000000000000'))).code, 407);
  assert.equal((await status(proxy(`${id}-cc-de`, id))).code, 400, 'a lower-case country is a bad parameter');
  assert.equal((await status(proxy(`00000000-0000-4000-8000-000000000000-cc-de`, id))).code, 407, 'a bad credential is 407 before its grammar');
  const fr = await status(proxy(`${id}-cc-FR`, id));
  assert.equal(fr.code, 412);
  assert.match(fr.text, /"code":"location_unavailable"/);
  assert.match(fr.text, /country FR is not available/);
  const berlin = await status(proxy(`${id}-cc-DE-city-berlin`, id));
  assert.equal(berlin.code, 412);
  assert.match(berlin.text, /city berlin is not available/);
  // CONNECT gets the same answers
  const c = await curl(['-p', ...proxy(`${id}-cc-US-city-boston`, id), files.url('/file/small')]);
  assert.notEqual(c.code, 0);
  assert.match(c.stderr, /412/);
  // none of this opened a connection for the session
  assert.equal(h.mem.sessions.get(id)!.connections, 0);
  h.mem.assertNoFullIdsLogged();
});

test('proxy traffic obeys the same limits: session byte cap ends the session; pause refuses', async () => {
  const customer = 'c-proxy';
  h.mem.setLimits(customer, 'session', { downloaded_bytes: 500_000 });
  const id = h.mem.createSession({ customer, reusable: true });
  const r = await curl([...proxy(id, id), files.url('/file/big')]);
  assert.notEqual(r.code, 0);
  await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
  const row = h.mem.sessions.get(id)!;
  assert.equal(row.status, 'ended');
  assert.ok(row.downloaded_bytes >= 500_000 && row.downloaded_bytes < 500_000 + 65536);
  const again = await curl(['-D', '-', ...proxy(id, id), files.url('/file/small')]);
  assert.match(again.body.toString(), /^HTTP\/1\.1 403/);
  const p = h.mem.createSession({ customer: 'c-proxy-2', reusable: true });
  h.mem.sessions.get(p)!.paused = true;
  const paused = await curl(['-D', '-', ...proxy(p, p), files.url('/file/small')]);
  assert.match(paused.body.toString(), /^HTTP\/1\.1 403[\s\S]*paused/);
});

test("egress 'public-only' refuses loopback destinations (VLESS and proxy) and never connects", async () => {
  const strict = await startHarness({ egress: 'public-only' });
  try {
    const id = strict.mem.createSession({ reusable: true });
    const before = files.sockets.length + files.open.size;
    const r = await curl(['-D', '-', '-x', `http://${id}:${id}@127.0.0.1:${strict.proxyPort}`, files.url('/file/small')]);
    assert.match(r.body.toString(), /^HTTP\/1\.1 403[\s\S]*destination_forbidden/);
    const r2 = await curl(['-D', '-', '-x', `http://${id}:${id}@127.0.0.1:${strict.proxyPort}`, `http://localhost:${files.port}/file/small`]);
    assert.match(r2.body.toString(), /^HTTP\/1\.1 403/);
    // VLESS over raw TCP asking for the loopback target: closed, no response header
    const sock = connect(strict.vlessTcpPort, '127.0.0.1');
    const got: Buffer[] = [];
    sock.on('data', (b) => got.push(b));
    sock.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: files.port, address: '127.0.0.1' }), Buffer.from('GET /file/small HTTP/1.0\r\n\r\n')]));
    await new Promise((res) => sock.once('close', res));
    assert.equal(Buffer.concat(got).length, 0);
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(files.sockets.length + files.open.size, before, 'the loopback target saw no connection');
  } finally {
    await strict.close();
  }
});
