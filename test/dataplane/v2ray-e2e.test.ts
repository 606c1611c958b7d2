// End-to-end with Debian's v2ray 4.34 as the VLESS client (SOCKS inbound -> our server).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startFileServer, startUdpEcho, sha256, type FileServer } from './helpers/targets.ts';
import { startV2rayClient, curlSocks, requireV2ray, withV2rayClient } from './helpers/v2ray.ts';
import { createSocket } from 'node:dgram';

const MB = 1024 * 1024;
let h: Harness;
let files: FileServer;

before(async () => {
  requireV2ray();
  h = await startHarness();
  files = await startFileServer({ big: 4 * MB, small: 64 * 1024, slow: 2 * MB });
});
after(async () => {
  await h?.close();
  await files?.close();
});

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const network of ['ws', 'tcp'] as const) {
  describe(`VLESS over ${network}`, () => {
    test('a file arrives intact; counters equal the bytes moved; start, stats and end events', async () => {
      const id = h.mem.createSession({ reusable: false, client: `dl-${network}` });
      await withV2rayClient(h.config(id, network), async (v) => {
        const before = files.sockets.length;
        const r = await curlSocks(v.socksPort, files.url('/file/big'));
        assert.equal(r.code, 0, r.stderr + v.output());
        assert.equal(sha256(r.body), sha256(files.files.get('big')!));
        const end = await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
        await settle(50);
        const moved = files.sockets.slice(before);
        assert.equal(moved.length, 1);
        const row = h.mem.sessions.get(id)!;
        assert.equal(row.downloaded_bytes, moved[0].written);
        assert.equal(row.uploaded_bytes, moved[0].read);
        assert.equal(end.downloaded_bytes, moved[0].written);
        assert.equal(row.status, 'ended');
        assert.equal(row.connections, 1);
        const types = h.mem.eventsOf(id).map((e) => e.type);
        assert.equal(types[0], 'session_start');
        assert.deepEqual(types.slice(-2), ['session_stats', 'session_end']);
        h.mem.assertNoFullIdsLogged();
      });
    });

    test('a second connection of a non-reusable session is refused', async () => {
      const id = h.mem.createSession({ reusable: false, client: `nr-${network}` });
      await withV2rayClient(h.config(id, network), async (v) => {
        const first = curlSocks(v.socksPort, files.url('/slow/slow?rate=2000000'));
        await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_start');
        // while the first one is open
        const r2 = await curlSocks(v.socksPort, files.url('/file/small'), [], 5);
        assert.notEqual(r2.code, 0);
        assert.equal(r2.body.length, 0);
        const r1 = await first;
        assert.equal(r1.code, 0, r1.stderr);
        assert.equal(sha256(r1.body), sha256(files.files.get('slow')!));
        await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
        // and after it closed (the session has ended)
        const r3 = await curlSocks(v.socksPort, files.url('/file/small'), [], 5);
        assert.notEqual(r3.code, 0);
        assert.equal(h.mem.sessions.get(id)!.connections, 1);
        assert.equal(h.mem.sessions.get(id)!.status, 'ended');
        const refusals = h.mem.logs.filter((l) => JSON.stringify(l.obj).includes(id.slice(0, 8))).map((l) => (l.obj as { reason?: string }).reason);
        assert.ok(refusals.includes('not_reusable'), JSON.stringify(refusals));
        assert.ok(refusals.includes('ended'), JSON.stringify(refusals));
        h.mem.assertNoFullIdsLogged();
      });
    });

    test('reusable session: live counters, stats while open, idle after', async () => {
      const id = h.mem.createSession({ reusable: true, client: `re-${network}` });
      await withV2rayClient(h.config(id, network), async (v) => {
        const p = curlSocks(v.socksPort, files.url('/slow/slow?rate=1000000'));
        await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_stats', 5000);
        const live = h.dp.live(id)!;
        assert.equal(live.status, 'active');
        assert.equal(live.open_connections, 1);
        assert.ok(live.downloaded_bytes > 0);
        await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_heartbeat', 5000);
        const r = await p;
        assert.equal(r.code, 0, r.stderr);
        assert.equal(sha256(r.body), sha256(files.files.get('slow')!));
        const end = await h.mem.waitForEvent((e) => e.sessionId === id && e.type === 'session_end');
        assert.equal(h.mem.sessions.get(id)!.status, 'idle');
        assert.ok(end.duration >= 1, `duration ${end.duration}`);
        // the store saw counters at least every second while the transfer ran
        const saves = h.mem.saves.filter((s) => s.id === id).map((s) => s.at);
        for (let i = 1; i < saves.length; i++) assert.ok(saves[i] - saves[i - 1] <= 1100, 'a save gap over 1 s');
        // reusable: a second connection is fine
        const r2 = await curlSocks(v.socksPort, files.url('/file/small'));
        assert.equal(r2.code, 0, r2.stderr);
      });
    });
  });
}

test('UDP through v2ray (dokodemo-door -> VLESS UDP over ws) is echoed and counted', async () => {
  const echo = await startUdpEcho();
  const id = h.mem.createSession({ reusable: true, client: 'udp' });
  const v = await startV2rayClient(h.config(id, 'ws'), { udpTarget: { host: '127.0.0.1', port: echo.port } });
  const sock = createSocket('udp4');
  try {
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    const got: Buffer[] = [];
    sock.on('message', (m) => got.push(m));
    const sent: Buffer[] = [];
    for (let i = 0; i < 10 && got.length < 5; i++) {
      const msg = Buffer.from(`datagram-${i}-${'x'.repeat(100)}`);
      sent.push(msg);
      sock.send(msg, v.udpPort!, '127.0.0.1');
      await settle(150);
    }
    assert.ok(got.length >= 5, `only ${got.length} echoes: ${v.output()}`);
    for (const m of got) assert.ok(sent.some((s) => s.equals(m)));
    const live = h.dp.live(id)!;
    assert.ok(live.uploaded_bytes >= got.length * sent[0].length);
    assert.ok(live.downloaded_bytes >= got.length * sent[0].length);
  } finally {
    sock.close();
    await v.close();
    await echo.close();
  }
});
