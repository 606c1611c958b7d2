// A failing store (disk gone, database locked) under live traffic: no exception escapes a
// socket handler or the ticker, new connections are refused cleanly, open ones keep relaying,
// and the counters never go backwards once the store is back (the unsaved totals are kept in
// memory and saved again).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startTcpEcho, startFileServer, type FileServer } from './helpers/targets.ts';
import { curl } from './helpers/v2ray.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

let h: Harness;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let files: FileServer;
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => { uncaught.push(err); };

before(async () => {
  process.on('uncaughtException', onUncaught);
  h = await startHarness();
  echo = await startTcpEcho();
  files = await startFileServer({ small: 1000 });
});
after(async () => {
  h.mem.storeFails = false;
  await h?.close();
  await echo?.close();
  await files?.close();
  process.removeListener('uncaughtException', onUncaught);
});

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw VLESS tcp client to the echo server. */
async function open(id: string): Promise<{ s: Socket; got: () => number; closed: Promise<void> }> {
  const s = connect(h.vlessTcpPort, '127.0.0.1');
  s.on('error', () => {});
  let got = 0;
  s.on('data', (b: Buffer) => { got += b.length; });
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  await new Promise<void>((r) => s.once('connect', () => r()));
  s.write(buildVlessHeader({ id, command: 'tcp', port: echo.port, address: '127.0.0.1' }));
  return { s, got: () => got, closed };
}

async function until(pred: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`timed out: ${what}`);
    await settle(20);
  }
}

test('the store failing inside admit() and counter saves: no uncaught exception, clean refusal, counters never go backwards', async () => {
  const id = h.mem.createSession({ reusable: true, customer: 'c-store', client: 'k-store' });
  const a = await open(id);
  a.s.write(Buffer.alloc(50_000, 1));
  await until(() => a.got() >= 50_002, 5000, 'echo before the failure');
  const beforeLive = h.dp.live(id)!;
  assert.ok(beforeLive.uploaded_bytes >= 50_000);

  h.mem.storeFails = true;
  // new connections: a session the runtime has in memory, one it has not (new customer), the proxy
  const again = await open(id);
  h.mem.storeFails = false;
  const fresh = h.mem.createSession({ reusable: true, customer: 'c-store-2' });
  h.mem.storeFails = true;
  const newcomer = await open(fresh);
  const limit = (p: Promise<void>) => Promise.race([p, settle(3000).then(() => { throw new Error('connection not closed'); })]);
  await limit(again.closed);
  await limit(newcomer.closed);
  assert.equal(again.got(), 0, 'a refused connection gets no VLESS response');
  assert.equal(newcomer.got(), 0);
  const viaProxy = await curl(['-x', `http://${fresh}:${fresh}@127.0.0.1:${h.proxyPort}`, '-o', '/dev/null', '-w', '%{http_code}', files.url('/file/small')], 5);
  assert.notEqual(viaProxy.body.toString(), '200', 'the proxy refuses while the store is down');

  // the open connection keeps relaying and counting; the ticker runs (limits re-read fails) meanwhile
  a.s.write(Buffer.alloc(30_000, 2));
  await until(() => a.got() >= 80_002, 5000, 'echo while the store is down');
  await settle(1300);
  a.s.destroy();
  await a.closed;
  await settle(300);
  const during = h.dp.live(id);
  assert.ok(during, 'a session whose counters could not be saved stays in memory');
  assert.ok(during.uploaded_bytes >= beforeLive.uploaded_bytes + 30_000);

  h.mem.storeFails = false;
  await until(() => h.mem.sessions.get(id)!.uploaded_bytes >= during.uploaded_bytes, 5000, 'the unsaved counters reach the store');
  const row = h.mem.sessions.get(id)!;
  assert.ok(row.uploaded_bytes >= during.uploaded_bytes && row.downloaded_bytes >= during.downloaded_bytes, 'stored counters went backwards');
  // a new connection after recovery starts from the saved totals, not from older ones
  const b = await open(id);
  b.s.write(Buffer.alloc(10, 3));
  await until(() => b.got() >= 12, 5000, 'echo after recovery');
  assert.ok(h.dp.live(id)!.uploaded_bytes >= during.uploaded_bytes + 10);
  b.s.destroy();
  await b.closed;
  assert.deepEqual(uncaught, [], 'an exception escaped a socket handler or a timer');
  assert.ok(h.mem.logs.some((l) => l.level === 'error'), 'the store failure is logged');
});
