// Pause and limits on live traffic, driven through Debian's v2ray as the VLESS client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startFileServer, sha256, type FileServer } from './helpers/targets.ts';
import { curlSocks, requireV2ray, type V2rayClient, withV2rayClient } from './helpers/v2ray.ts';

const MB = 1024 * 1024;
const KiB = 1024;
let h: Harness;
let files: FileServer;

before(async () => {
  requireV2ray();
  h = await startHarness();
  files = await startFileServer({ big: 8 * MB, mid: 1 * MB, small: 32 * KiB });
});
after(async () => {
  await h?.close();
  await files?.close();
});

// A pause or a cap resets the connection (TCP RST). v2ray 4.x over raw TCP
// does not notice a reset in the middle of a bulk read (its readv reader waits for readiness
// again on any error), so curl behind it stalls until its own --max-time instead of failing at
// once; the cut transfers over tcp below get a short max-time for that reason.
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

const withClient = <T>(id: string, network: 'ws' | 'tcp', fn: (v: V2rayClient) => Promise<T>): Promise<T> => withV2rayClient(h.config(id, network), fn);

test('pause cuts a running transfer within 100 ms and refuses new connections until resume', async () => {
  const customer = 'c-pause';
  h.mem.setLimits(customer, 'session', { download_speed: 500 * KiB });
  const id = h.mem.createSession({ customer, reusable: true });
  await withClient(id, 'ws', async (v) => {
    const transfer = curlSocks(v.socksPort, files.url('/file/big'));
    await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_start');
    await settle(500);
    assert.equal(h.dp.live(id)!.open_connections, 1);
    h.mem.sessions.get(id)!.paused = true; // the control plane stores the flag, then calls pause()
    const t0 = performance.now();
    h.dp.pause(id);
    const end = await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end', 1000);
    assert.ok(end.at - t0 < 100, `session_end ${end.at - t0} ms after pause`);
    const r = await transfer;
    assert.notEqual(r.code, 0);
    assert.ok(r.body.length < 8 * MB);
    assert.equal(h.mem.sessions.get(id)!.status, 'idle');
    // refused while paused
    const again = await curlSocks(v.socksPort, files.url('/file/small'), [], 5);
    assert.notEqual(again.code, 0);
    // resume
    h.mem.sessions.get(id)!.paused = false;
    h.mem.setLimits(customer, 'session', undefined);
    h.dp.limitsChanged(customer);
    const ok = await curlSocks(v.socksPort, files.url('/file/small'));
    assert.equal(ok.code, 0, ok.stderr);
  });
});

test('a session download speed cap shapes the transfer (within 10%)', async () => {
  const customer = 'c-speed';
  const rate = 400 * KiB;
  h.mem.setLimits(customer, 'session', { download_speed: rate });
  const id = h.mem.createSession({ customer, reusable: true });
  await withClient(id, 'tcp', async (v) => {
    const transfer = curlSocks(v.socksPort, files.url('/file/big'), [], 12);
    await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_start');
    await settle(500); // past the initial burst
    const t0 = performance.now();
    const b0 = h.dp.live(id)!.downloaded_bytes;
    await settle(3000);
    const b1 = h.dp.live(id)!.downloaded_bytes;
    const measured = ((b1 - b0) * 1000) / (performance.now() - t0);
    assert.ok(Math.abs(measured - rate) / rate < 0.1, `measured ${Math.round(measured)} B/s vs cap ${rate}`);
    // a client cap that is lower takes over within a second
    h.mem.setLimits(customer, 'client', { download_speed: 200 * KiB });
    h.dp.limitsChanged(customer);
    await settle(1000);
    const c0 = h.dp.live(id)!.downloaded_bytes, t1 = performance.now();
    await settle(2000);
    const measured2 = ((h.dp.live(id)!.downloaded_bytes - c0) * 1000) / (performance.now() - t1);
    assert.ok(Math.abs(measured2 - 200 * KiB) / (200 * KiB) < 0.1, `measured ${Math.round(measured2)} B/s vs client cap ${200 * KiB}`);
    h.mem.sessions.get(id)!.paused = true;
    h.dp.pause(id);
    await transfer;
  });
  h.mem.setLimits(customer, 'client', undefined);
});

test('a session byte cap ends the session with overshoot under 64 KiB', async () => {
  const customer = 'c-cap';
  const cap = 1 * MB + 12345;
  h.mem.setLimits(customer, 'session', { downloaded_bytes: cap });
  const id = h.mem.createSession({ customer, reusable: true });
  await withClient(id, 'ws', async (v) => {
    const r = await curlSocks(v.socksPort, files.url('/file/big'));
    assert.notEqual(r.code, 0);
    const end = await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
    const row = h.mem.sessions.get(id)!;
    assert.equal(row.status, 'ended');
    assert.ok(row.downloaded_bytes >= cap && row.downloaded_bytes - cap < 64 * KiB, `downloaded ${row.downloaded_bytes}, cap ${cap}`);
    assert.equal(end.downloaded_bytes, row.downloaded_bytes);
    // The cap resets the connection: what was still in flight is dropped, so
    // the client gets at most what was counted, never more.
    assert.ok(r.body.length <= cap && r.body.length > 0, `client received ${r.body.length} of ${cap}`);
    // ended is terminal
    const again = await curlSocks(v.socksPort, files.url('/file/small'), [], 5);
    assert.notEqual(again.code, 0);
  });
});

test('a client byte cap closes connections and refuses new ones until it is raised', async () => {
  const customer = 'c-client-cap';
  h.mem.setLimits(customer, 'client', { downloaded_bytes: 1 * MB });
  const a = h.mem.createSession({ customer, client: 'alice', reusable: true });
  const b = h.mem.createSession({ customer, client: 'alice', reusable: true });
  const other = h.mem.createSession({ customer, client: 'bob', reusable: true });
  await withClient(a, 'tcp', async (va) => {
    const r1 = await curlSocks(va.socksPort, files.url('/file/mid'), [], 5); // ~1 MB + headers: hits the cap
    assert.notEqual(r1.code, 0);
    await h.mem.waitForEvent((e) => e.sessionId === a && e.type === 'session_end');
    assert.equal(h.mem.sessions.get(a)!.status, 'idle'); // not ended: the cap is the client's
    await withClient(b, 'tcp', async (vb) => {
      const r2 = await curlSocks(vb.socksPort, files.url('/file/small'), [], 5);
      assert.notEqual(r2.code, 0, 'another session of the same client is refused while over the cap');
      await withClient(other, 'tcp', async (vo) => {
        const r3 = await curlSocks(vo.socksPort, files.url('/file/small'));
        assert.equal(r3.code, 0, 'another client is not affected');
      });
      h.mem.setLimits(customer, 'client', { downloaded_bytes: 10 * MB });
      h.dp.limitsChanged(customer);
      const r4 = await curlSocks(vb.socksPort, files.url('/file/small'));
      assert.equal(r4.code, 0, r4.stderr);
      assert.equal(sha256(r4.body), sha256(files.files.get('small')!));
    });
  });
});

test('max_sessions and max_reconnections', async () => {
  const customer = 'c-max';
  h.mem.setLimits(customer, 'client', { max_sessions: 1, max_reconnections: 1 });
  const a = h.mem.createSession({ customer, client: 'carol', reusable: true });
  const b = h.mem.createSession({ customer, client: 'carol', reusable: true });
  await withClient(a, 'ws', async (va) => {
    await withClient(b, 'ws', async (vb) => {
      const slow = curlSocks(va.socksPort, files.url('/slow/mid?rate=1000000'));
      await h.mem.waitForEvent((e) => e.sessionId === a && e.type === 'session_start');
      const rb = await curlSocks(vb.socksPort, files.url('/file/small'), [], 5);
      assert.notEqual(rb.code, 0, 'a second concurrent session of the client is refused');
      assert.equal((await slow).code, 0);
      await h.mem.waitForEvent((e) => e.sessionId === a && e.type === 'session_end');
      const rb2 = await curlSocks(vb.socksPort, files.url('/file/small'));
      assert.equal(rb2.code, 0, 'once the first session is idle the other may connect');
    });
    // a: first connection done (1), one reconnection allowed (2), the third is refused
    const r2 = await curlSocks(va.socksPort, files.url('/file/small'));
    assert.equal(r2.code, 0);
    const r3 = await curlSocks(va.socksPort, files.url('/file/small'), [], 5);
    assert.notEqual(r3.code, 0);
    assert.equal(h.mem.sessions.get(a)!.connections, 2);
  });
  h.mem.assertNoFullIdsLogged();
});

test('a global byte cap lowered under live traffic cuts every session of the customer within 1 s', async () => {
  const customer = 'c-global';
  h.mem.setLimits(customer, 'session', { download_speed: 300 * KiB });
  const a = h.mem.createSession({ customer, client: 'x', reusable: true });
  const b = h.mem.createSession({ customer, client: 'y', reusable: true });
  await withClient(a, 'ws', async (va) => {
    await withClient(b, 'tcp', async (vb) => {
      const ta = curlSocks(va.socksPort, files.url('/file/big'), [], 30);
      const tb = curlSocks(vb.socksPort, files.url('/file/big'), [], 8);
      await h.mem.waitForEvent((e) => e.sessionId === a && e.type === 'session_start');
      await h.mem.waitForEvent((e) => e.sessionId === b && e.type === 'session_start');
      await settle(500);
      h.mem.setLimits(customer, 'global', { downloaded_bytes: 1 }); // already over
      const t0 = performance.now();
      h.dp.limitsChanged(customer);
      const ea = await h.mem.waitForEvent((e) => e.sessionId === a && e.type === 'session_end', 1000);
      const eb = await h.mem.waitForEvent((e) => e.sessionId === b && e.type === 'session_end', 1000);
      assert.ok(Math.max(ea.at, eb.at) - t0 < 1000);
      assert.notEqual((await ta).code, 0);
      assert.notEqual((await tb).code, 0);
      assert.equal(h.mem.sessions.get(a)!.status, 'idle');
      const again = await curlSocks(va.socksPort, files.url('/file/small'), [], 5);
      assert.notEqual(again.code, 0, 'refused while over the global cap');
      h.mem.setLimits(customer, 'global', undefined); // deleting the limit lets them connect again
      h.dp.limitsChanged(customer);
      const ok = await curlSocks(vb.socksPort, files.url('/file/small'));
      assert.equal(ok.code, 0, ok.stderr);
    });
  });
  h.mem.setLimits(customer, 'session', undefined);
});
