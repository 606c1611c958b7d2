// Limits across nodes: a client whose connections are spread over two data-plane nodes
// (127.0.0.2 and 127.0.0.3), each attached to a different control-plane instance on one throwaway
// PostgreSQL. Real sockets end to end: raw VLESS over TCP to each node, a loopback echo behind.
//  - byte caps: the client's cap holds in total, at most 1 MiB over per node (the nodes move only
//    what the control plane granted them: server/store/grants.ts), and both nodes cut;
//  - max_sessions: the control plane decides at a session's first connection, whichever node;
//  - speed caps: the client's download speed holds within 15 % in total while both nodes carry it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import pg from 'pg';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openVlessEcho, pushThroughEcho, startTcpEcho } from '../dataplane/helpers/targets.ts';

const MiB = 1 << 20;
let pgServer: PgServer;
let a: RunningServer;
let b: RunningServer;
let sao: RunningNode;
let syd: RunningNode;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let owner: string;
const dirs: string[] = [];

before(async () => {
  pgServer = await startPostgres();
  const serve = async () => {
    const dir = tempDir('vad-limits-cp-');
    dirs.push(dir);
    return startServer({ dataDir: dir, database: pgServer.url(), port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  };
  a = await serve();
  b = await serve();
  owner = (await a.services.data.createToken('limits', 'owner')).token;
  const node = async (srv: RunningServer, name: string, zone: string, host: string) => {
    const added = await srv.services.data.addNode({ name, zone, public_host: host });
    const dir = tempDir('vad-limits-node-');
    dirs.push(dir);
    return runNode({ controls: [srv.origin], token: added.token, host, port: 0, vlessTcpPort: 0, proxyPort: null, egress: 'allow-all', dataDir: dir, log: silentLogger });
  };
  sao = await node(a, 'sao-1', 'br-sao', '127.0.0.2');
  syd = await node(b, 'syd-1', 'au-syd', '127.0.0.3');
  echo = await startTcpEcho();
  await waitFor(async () => {
    const zones = (await callApi(a.baseUrl, owner, 'GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>;
    return zones.filter((z) => (z.code === 'br-sao' || z.code === 'au-syd') && z.has_active_nodes).length === 2;
  }, 10_000, 'both nodes up');
});
after(async () => {
  await sao?.close();
  await syd?.close();
  await a?.close();
  await b?.close();
  await echo?.close();
  await pgServer?.destroy();
  for (const d of dirs) removeDir(d);
});

const call = (method: string, path: string, body?: unknown) => callApi(a.baseUrl, owner, method, path, body);
const callB = (method: string, path: string, body?: unknown) => callApi(b.baseUrl, owner, method, path, body);

/** One session of `client` on each node: [on sao (127.0.0.2), on syd (127.0.0.3)]. */
async function spread(client: string): Promise<[string, string]> {
  const one = await call('POST', '/sessions', { client_id: client, zone: 'br-sao', reusable: true });
  const two = await callB('POST', '/sessions', { client_id: client, zone: 'au-syd', reusable: true });
  assert.equal(one.json.configuration.address, '127.0.0.2');
  assert.equal(two.json.configuration.address, '127.0.0.3');
  // Each node learns of its session from its state message (rebuilt every 250 ms).
  await waitFor(async () => (await pushThroughEcho(sao.ports.vless_tcp_port!, one.json.id, echo.port, 1024, '127.0.0.2')) > 0, 10_000, 'sao admits');
  await waitFor(async () => (await pushThroughEcho(syd.ports.vless_tcp_port!, two.json.id, echo.port, 1024, '127.0.0.3')) > 0, 10_000, 'syd admits');
  return [one.json.id, two.json.id];
}

/**
 * The downloaded bytes of a session on sao (read on A) and one on syd (read on B) together, once
 * they add up to about what came back through the echo (`echoed`, less a chunk still in flight)
 * and have stopped moving.
 */
async function reportedDown(one: string, two: string, echoed: number): Promise<number> {
  const read = async () => (await call('GET', `/sessions/${one}/status`)).json.downloaded_bytes + (await callB('GET', `/sessions/${two}/status`)).json.downloaded_bytes;
  let total = 0;
  await waitFor(async () => (total = await read()) >= echoed - 64 * 1024, 10_000, 'the nodes reported what they moved');
  // A connection the test already cut may have moved bytes it never echoed, still on their way
  // in a node's next report (later on a loaded machine): the total counts once it holds for
  // 1.5 s (at most 10 s more).
  const end = performance.now() + 10_000;
  let since = performance.now();
  while (performance.now() < end && performance.now() - since < 1500) {
    await new Promise((r) => setTimeout(r, 250));
    const now = await read();
    if (now !== total) {
      total = now;
      since = performance.now();
    }
  }
  return total;
}

/** Writes to the echo as fast as the connection takes it for `ms`; resolves with what came back. */
async function stream(port: number, host: string, id: string, ms: number, marks?: number[]): Promise<{ got: number; conn: { s: Socket; got: () => number } }> {
  const conn = await openVlessEcho(port, id, echo.port, host);
  const chunk = Buffer.alloc(64 * 1024, 7);
  const end = performance.now() + ms;
  while (performance.now() < end && !conn.s.destroyed) {
    if (!conn.s.write(chunk)) {
      // Drained, or 100 ms gone (a held flow): either way the drain listener goes.
      let onDrain = () => {};
      await Promise.race([new Promise<void>((r) => conn.s.once('drain', (onDrain = r))), new Promise((r) => setTimeout(r, 100))]);
      conn.s.off('drain', onDrain);
    }
    if (marks) marks.push(conn.got());
  }
  return { got: conn.got(), conn };
}

test('a client byte cap holds across two nodes: at most 1 MiB over per node, and both cut', async (t) => {
  const CAP = 6 * MiB;
  assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: CAP })).status, 200);
  try {
    const [one, two] = await spread('spread-cap');
    // Both nodes push 5 MiB each at once: 10 MiB wanted, 6 MiB allowed.
    const [x, y] = await Promise.all([
      pushThroughEcho(sao.ports.vless_tcp_port!, one, echo.port, 5 * MiB, '127.0.0.2'),
      pushThroughEcho(syd.ports.vless_tcp_port!, two, echo.port, 5 * MiB, '127.0.0.3'),
    ]);
    assert.ok(x + y < 10 * MiB, `the cap stopped the transfers (${x} + ${y} came back)`);
    // Counters reach the API from both nodes; the total is the client's.
    const total = await reportedDown(one, two, x + y);
    t.diagnostic(`moved ${total} bytes for a cap of ${CAP} (sao echoed ${x}, syd ${y})`);
    assert.ok(total <= CAP + 2 * MiB, `at most 1 MiB over per node: ${total} for a cap of ${CAP}`);
    assert.ok(total >= CAP - 2 * MiB, `the nodes used most of the cap between them: ${total} of ${CAP}`);
    // Once the control plane has nothing left to grant, both nodes refuse the client.
    await waitFor(async () => (await pushThroughEcho(sao.ports.vless_tcp_port!, one, echo.port, 64 * 1024, '127.0.0.2')) === 0, 5000, 'sao refuses');
    await waitFor(async () => (await pushThroughEcho(syd.ports.vless_tcp_port!, two, echo.port, 64 * 1024, '127.0.0.3')) === 0, 5000, 'syd refuses');
    // Raising the cap lets both move again. One attempt can take 4.5 s by itself (3 s for the
    // echo's first answer, 1.5 s after the last write), so the budget allows a second attempt
    // on a loaded machine (CI runs this beside other suites).
    assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: CAP + 4 * MiB })).status, 200);
    await waitFor(async () => (await pushThroughEcho(syd.ports.vless_tcp_port!, two, echo.port, 64 * 1024, '127.0.0.3')) > 32 * 1024, 12_000, 'syd carries again');
  } finally {
    await call('DELETE', '/customer/limits/client');
  }
});

test('max_sessions holds across nodes: the control plane decides at the first connection', async () => {
  assert.equal((await call('PATCH', '/customer/limits/client', { max_sessions: 1 })).status, 200);
  try {
    const one = (await call('POST', '/sessions', { client_id: 'spread-max', zone: 'br-sao', reusable: true })).json.id as string;
    const two = (await callB('POST', '/sessions', { client_id: 'spread-max', zone: 'au-syd', reusable: true })).json.id as string;
    // The first session opens a connection on sao and keeps it open.
    let held: Awaited<ReturnType<typeof openVlessEcho>> | undefined;
    await waitFor(async () => {
      held = await openVlessEcho(sao.ports.vless_tcp_port!, one, echo.port, '127.0.0.2');
      if (held.got() >= 4) return true;
      held.s.destroy();
      return false;
    }, 10_000, 'sao admits the first session');
    // The second, on the other node and another instance, is refused while the first is active.
    for (let i = 0; i < 3; i++) {
      const c = await openVlessEcho(syd.ports.vless_tcp_port!, two, echo.port, '127.0.0.3');
      assert.ok(c.got() < 4, `the second session is refused on syd (attempt ${i + 1})`);
      c.s.destroy();
    }
    assert.equal((await callB('GET', `/sessions/${two}/status`)).json.status, 'created');
    // The first closes (and its 2 s reconnection grace passes): now the second gets in.
    held!.s.destroy();
    await waitFor(async () => (await pushThroughEcho(syd.ports.vless_tcp_port!, two, echo.port, 8 * 1024, '127.0.0.3')) > 0, 10_000, 'syd admits the second session');
  } finally {
    await call('DELETE', '/customer/limits/client');
  }
});

test('an idle node gives back its unused grant: another node moves the rest of the cap', async (t) => {
  const CAP = 128 * MiB;
  const BURST = 24 * MiB;
  assert.equal((await call('PATCH', '/customer/limits/client', { downloaded_bytes: CAP })).status, 200);
  const db = new pg.Client({ connectionString: pgServer.url() });
  await db.connect();
  try {
    const [one, two] = await spread('idle-grant');
    // sao moves a burst as fast as it can: its grant grows to about two seconds of that pace.
    const burst = await openVlessEcho(sao.ports.vless_tcp_port!, one, echo.port, '127.0.0.2');
    const chunk = Buffer.alloc(256 * 1024, 3);
    for (let sent = 0; sent < BURST && !burst.s.destroyed; sent += chunk.length) {
      if (!burst.s.write(chunk)) await new Promise((r) => burst.s.once('drain', r));
    }
    await waitFor(() => burst.got() >= BURST, 20_000, 'the burst came back');
    burst.s.destroy();
    // Then it is idle: what it holds unused goes back, all but KEEP_IDLE (1 MiB).
    const held = async () => {
      const r = await db.query<{ h: string }>(
        `SELECT (g.granted_down - g.used_down)::text AS h FROM node_grants g JOIN nodes n ON n.id = g.node_id
         WHERE n.name = 'sao-1' AND g.client_id = 'idle-grant'`,
      );
      return Number(r.rows[0]?.h ?? 0);
    };
    let most = 0;
    await waitFor(async () => {
      const h = await held();
      most = Math.max(most, h);
      return most > 2 * MiB && h <= MiB;
    }, 15_000, 'sao\'s unused grant given back');
    t.diagnostic(`sao held up to ${(most / MiB).toFixed(1)} MiB unused after its burst, then 1 MiB`);
    // syd now moves the rest: everything but what sao kept.
    // A stream that moves almost nothing may be a grant round trip on a loaded machine (or a node
    // holding its caps while its channel is slow), not the cap: only five such in a row end the
    // loop (the bound on attempts keeps it finite).
    let sydGot = 0;
    for (let i = 0, idle = 0; i < 18 && idle < 5; i++) {
      const r = await stream(syd.ports.vless_tcp_port!, '127.0.0.3', two, 3000);
      r.conn.s.destroy();
      sydGot += r.got;
      idle = r.got < 64 * 1024 ? idle + 1 : 0;
      // syd may still hold the final grant of when sao held the rest, and refuse at once until the
      // state after the release reaches it: the next try comes after a state's interval.
      if (r.got < 64 * 1024) await new Promise((res) => setTimeout(res, 300));
    }
    const total = await reportedDown(one, two, BURST + sydGot);
    t.diagnostic(`moved ${(total / MiB).toFixed(1)} MiB of a ${CAP / MiB} MiB cap (syd ${(sydGot / MiB).toFixed(1)} MiB after sao went idle)`);
    assert.ok(total >= CAP - 2 * MiB, `an idle node's grant does not keep the other short: ${total} of ${CAP}`);
    assert.ok(total <= CAP + 2 * MiB, `at most 1 MiB over per node: ${total} for ${CAP}`);
  } finally {
    await db.end();
    await call('DELETE', '/customer/limits/client');
  }
});

test('a client speed cap holds within 15 % in total while two nodes carry its connections', async (t) => {
  const RATE = 1_000_000;
  assert.equal((await call('PATCH', '/customer/limits/client', { download_speed: RATE })).status, 200);
  try {
    const [one, two] = await spread('spread-speed');
    const WARM = 2000, MEASURE = 4000;
    const at = { x: [] as number[], y: [] as number[] };
    const start = performance.now();
    const sample = async () => {
      await new Promise((r) => setTimeout(r, WARM));
      const x0 = at.x.at(-1) ?? 0, y0 = at.y.at(-1) ?? 0, t0 = performance.now();
      await new Promise((r) => setTimeout(r, MEASURE));
      const x1 = at.x.at(-1) ?? 0, y1 = at.y.at(-1) ?? 0, t1 = performance.now();
      return ((x1 - x0 + (y1 - y0)) * 1000) / (t1 - t0);
    };
    const [rate, s1, s2] = await Promise.all([
      sample(),
      stream(sao.ports.vless_tcp_port!, '127.0.0.2', one, WARM + MEASURE + 500, at.x),
      stream(syd.ports.vless_tcp_port!, '127.0.0.3', two, WARM + MEASURE + 500, at.y),
    ]);
    s1.conn.s.destroy();
    s2.conn.s.destroy();
    assert.ok(performance.now() - start < 20_000);
    assert.ok(s1.got > 0 && s2.got > 0, 'both nodes carried the client');
    t.diagnostic(`together ${Math.round(rate)} B/s for a cap of ${RATE} B/s`);
    assert.ok(Math.abs(rate - RATE) <= 0.15 * RATE, `the two nodes together moved ${Math.round(rate)} B/s for a cap of ${RATE} B/s`);
  } finally {
    await call('DELETE', '/customer/limits/client');
  }
});
