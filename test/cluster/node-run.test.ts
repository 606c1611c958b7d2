// A real data-plane node through the command line: `vpn-access serve` on a data folder (SQLite),
// `node add`, and `vpn-access node run` listening on 127.0.0.2 (Linux routes all of 127/8 to
// loopback) connected to it over /v2/node/channel. The zone turns active; a session in it links
// to 127.0.0.2 and the node's port; a raw VLESS-over-WebSocket transfer through the node moves
// the counters seen through the API and its events reach the control plane's event stream; a
// restart of `serve` during the transfer loses no counted byte and counts none twice; a pause
// through the API cuts the node's connection; `kill -9` of the node makes the zone inactive
// (its channel lost: within NODE_LOST_SECONDS, not the up window) while keeping the bytes it had
// reported; a hung node (SIGSTOP) is found by its channel's silence, well inside the up window;
// a clean stop makes it inactive at once. Without a control plane the node keeps carrying its
// sessions; `node remove` stops it. On PostgreSQL with two `serve` instances, a pause on the
// instance the node is not connected to cuts it (NOTIFY), and a kill -9 of the one it is
// connected to fails it over to the other without losing or double-counting a byte; so does one that
// hangs (SIGSTOP), found by its silence.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import WebSocket from 'ws';
import { freePort } from '../dataplane/helpers/targets.ts';
import { printedToken, serve, type ServeProcess } from '../helpers/cli.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { openRaw } from '../helpers/sse.ts';
import { CLI, NODE, ROOT, removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { NODE_UP_SECONDS } from '../../server/store/repos/nodes.ts';

const dirs: string[] = [];
let dir: string;
let port: number;
let srv: ServeProcess;
let owner: string;
let nodeProc: ChildProcess | null = null;
let nodeOut = '';
let target: Server;
const targetSockets = new Set<Socket>();
/** What the target sends on each connection: bytes, paced. Infinity streams until cut. */
let sendTotal = 0;
/** The address the target's last connection came from (the node's --egress-address). */
let lastRemote: string | undefined;

const childEnv = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_') || k.startsWith('NODE_TEST')) delete env[k];
  return env;
};
function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, [CLI, ...args], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${srv.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${owner}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

before(async () => {
  dir = tempDir('vad-noderun-');
  dirs.push(dir);
  port = await freePort();
  srv = await serve(dir, ['--port', String(port), '--quiet']);
  owner = printedToken(srv.stdout())!;
  assert.ok(owner, srv.stdout());
  // A loopback target sending `sendTotal` bytes per connection, 32 KiB every 40 ms (~800 KB/s).
  target = createServer((sock) => {
    targetSockets.add(sock);
    lastRemote = sock.remoteAddress;
    let sent = 0;
    const total = sendTotal;
    const chunk = Buffer.alloc(32 * 1024, 7);
    const timer = setInterval(() => {
      if (sock.destroyed) return clearInterval(timer);
      const n = Math.min(chunk.length, total - sent);
      if (n <= 0) {
        clearInterval(timer);
        sock.end();
        return;
      }
      sock.write(chunk.subarray(0, n));
      sent += n;
    }, 40);
    sock.on('error', () => {});
    sock.on('close', () => {
      clearInterval(timer);
      targetSockets.delete(sock);
    });
    sock.resume();
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
});

after(async () => {
  nodeProc?.kill('SIGKILL');
  srv?.kill('SIGKILL');
  for (const s of targetSockets) s.destroy();
  await new Promise<void>((r) => target?.close(() => r()));
  for (const d of dirs) removeDir(d);
});

function startNode(token: string, nodeDir: string, control = `http://127.0.0.1:${port}`, extra: string[] = []): Promise<number> {
  nodeOut = '';
  const child = spawn(
    NODE,
    [CLI, 'node', 'run', '--control', control, '--token', token, '--host', '127.0.0.2', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--relay-port', '0', '--egress', 'allow-all', '--data-dir', nodeDir, ...extra],
    { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  nodeProc = child;
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (nodeOut += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (nodeOut += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node run did not start:\n${nodeOut}`)), 20_000);
    const check = () => {
      const m = /node listening: VLESS ws 127\.0\.0\.2:(\d+)/.exec(nodeOut);
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      resolve(Number(m[1]));
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node run exited (${code}):\n${nodeOut}`));
    });
  });
}

/** A raw VLESS client over WebSocket to the target (TCP, 127.0.0.1), sending `payload` first. */
function vless(address: string, wsPort: number, path: string, id: string, payload: Buffer) {
  const ws = new WebSocket(`ws://${address}:${wsPort}${path}`);
  let received = 0;
  const uuid = Buffer.from(id.replace(/-/g, ''), 'hex');
  const tp = (target.address() as { port: number }).port;
  const header = Buffer.concat([Buffer.from([0]), uuid, Buffer.from([0, 1, tp >> 8, tp & 0xff, 1, 127, 0, 0, 1])]);
  ws.on('open', () => ws.send(Buffer.concat([header, payload])));
  ws.on('message', (d: Buffer) => (received += d.length));
  ws.on('error', () => {});
  const closed = new Promise<number>((r) => ws.once('close', () => r(Date.now())));
  // The response header (version, addons length) is not payload.
  return { ws, received: () => Math.max(0, received - 2), closed };
}

/** Whether br-sao has an active node; paced (the API's rate limit counts these calls too). */
/** The session as the API shows it; paced like zoneActive. */
const sessionOf = async (id: string) => {
  await new Promise((r) => setTimeout(r, 100));
  const res = await api('GET', `/sessions/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return res.json;
};

/** Waits up to 10 s until the session's counters equal the bytes moved; fails naming both. */
async function countersReach(id: string, uploaded: number, downloaded: number, what: string): Promise<void> {
  let last: any;
  await waitFor(
    async () => {
      last = await sessionOf(id);
      return last.downloaded_bytes === downloaded && last.uploaded_bytes === uploaded;
    },
    10_000,
    what,
  ).catch(() => assert.fail(`counters ${last?.uploaded_bytes}/${last?.downloaded_bytes}, moved ${uploaded}/${downloaded}`));
}

const zoneActive = async () => {
  await new Promise((r) => setTimeout(r, 250));
  const res = await api('GET', '/zones');
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return res.json.zones.find((z: { code: string }) => z.code === 'br-sao')?.has_active_nodes === true;
};

test('node run: active zone, placed links, counted traffic and events, serve restart without loss, pause cut, kill -9, restart, clean stop', async () => {
  /** sao-1 as `node list --json` shows it. */
  const nodeListed = () => (JSON.parse(cli(['node', 'list', '--json', '--data-dir', dir]).stdout) as Array<{ name: string; up: boolean; stopped_at: string | null; last_contact: string | null }>).find((n) => n.name === 'sao-1')!;
  const added = cli(['node', 'add', '--name', 'sao-1', '--zone', 'br-sao', '--public-host', '127.0.0.2', '--data-dir', dir]);
  assert.equal(added.status, 0, added.stderr);
  const nodeDir = tempDir('vad-node-');
  dirs.push(nodeDir);
  assert.equal(await zoneActive(), false);
  const wsPort = await startNode(added.stdout.trim(), nodeDir);
  await waitFor(zoneActive, 8000, 'the zone turns active once the node is in contact');

  const made = await api('POST', '/sessions', { client_id: 'p', zone: 'br-sao', reusable: true });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  const s = made.json;
  assert.equal(s.configuration.address, '127.0.0.2');
  assert.equal(s.configuration.port, wsPort);
  assert.equal(s.node, 'sao-1', 'the session names the node carrying it');
  assert.match(s.configuration_link, new RegExp(`@127\\.0\\.0\\.2:${wsPort}\\?`));

  // 1) A paced 2.5 MiB download through the node; `serve` restarts in the middle of it.
  const TOTAL = 80 * 32 * 1024;
  sendTotal = TOTAL;
  const up = Buffer.from('hello through the node');
  // The node learns of the new session with its next state (at most a few hundred ms).
  await new Promise((r) => setTimeout(r, 600));
  const c1 = vless('127.0.0.2', wsPort, s.configuration.path ?? '/vless', s.id, up);
  await waitFor(() => c1.received() > 0, 5000, 'bytes through the node');
  const t0 = Date.now();
  await waitFor(async () => (await sessionOf(s.id)).downloaded_bytes > 0, 2000, 'counters through the API within 2 s');
  console.log(`counters visible through the API ${Date.now() - t0} ms after the first byte arrived`);

  srv.kill('SIGTERM');
  await srv.exited;
  const during = c1.received();
  srv = await serve(dir, ['--port', String(port), '--quiet']);
  assert.ok(during < TOTAL, 'the restart happened during the transfer');
  await c1.closed;
  assert.equal(c1.received(), TOTAL, 'the client got every byte');
  await countersReach(s.id, up.length, TOTAL, 'counters equal to the bytes moved');

  // The node's events went through the normal event path: the stream (replay) shows them.
  const stream = await openRaw(`${srv.baseUrl}/sessions/events?session_id=${s.id}`, { authorization: `Bearer ${owner}` });
  try {
    await waitFor(() => stream.events().some((e) => e.event_type === 'session_start'), 5000, 'session_start in the event stream');
    await waitFor(() => stream.events().some((e) => e.event_type === 'session_end'), 8000, 'session_end in the event stream');
  } finally {
    stream.close();
  }
  // Nothing counted twice after the resend: still exactly the bytes moved.
  await new Promise((r) => setTimeout(r, 1500));
  const again = (await api('GET', `/sessions/${s.id}`)).json;
  assert.equal(again.downloaded_bytes, TOTAL);

  // 2) Pause through the API cuts the node's transfer.
  sendTotal = Infinity;
  const c2 = vless('127.0.0.2', wsPort, s.configuration.path ?? '/vless', s.id, up);
  await waitFor(() => c2.received() > 64 * 1024, 5000, 'the second transfer flows');
  const paused = await api('PATCH', `/sessions/${s.id}/pause`);
  assert.equal(paused.status, 200, JSON.stringify(paused.json));
  const pausedAt = Date.now();
  const cutAt = await Promise.race([c2.closed, new Promise<number>((r) => setTimeout(() => r(-1), 5000))]);
  assert.notEqual(cutAt, -1, 'the pause cut the connection');
  const cutMs = cutAt - pausedAt;
  assert.ok(cutMs <= 1000, `cut ${cutMs} ms after the pause`);
  console.log(`pause cut the node's connection ${cutMs} ms after the API answered`);

  // 3) kill -9 of the node: the zone goes inactive; the bytes it reported stay.
  await new Promise((r) => setTimeout(r, 1500));
  const before = (await api('GET', `/sessions/${s.id}`)).json;
  assert.ok(before.downloaded_bytes > TOTAL);
  nodeProc!.kill('SIGKILL');
  const killedAt = Date.now();
  await waitFor(async () => !(await zoneActive()), 15_000, 'the zone turns inactive within 15 s');
  console.log(`zone inactive ${Date.now() - killedAt} ms after kill -9`);
  // Down because its channel ended without a stop (found lost), not because its last contact is
  // older than the up window: that contact is recent still; `node list` says down, not stopped.
  const lostNode = nodeListed();
  assert.deepEqual([lostNode.up, lostNode.stopped_at], [false, null]);
  assert.ok(Date.now() - Date.parse(lostNode.last_contact!) < NODE_UP_SECONDS * 1000, `down with its last contact ${lostNode.last_contact} within the up window`);
  assert.match(cli(['node', 'list', '--data-dir', dir]).stdout, /^sao-1  br-sao  down  last contact \d{4}-/m);
  const afterKill = (await api('GET', `/sessions/${s.id}`)).json;
  assert.equal(afterKill.downloaded_bytes, before.downloaded_bytes);
  assert.equal(afterKill.uploaded_bytes, before.uploaded_bytes);
  const refused = await api('POST', '/sessions', { client_id: 'p', zone: 'br-sao' });
  assert.equal(refused.status, 422);

  // 4) Restarted (same token and data folder, a new port), the node serves again: the zone is
  // active, the session's link follows the new port, and a transfer through it is counted.
  const newPort = await startNode(added.stdout.trim(), nodeDir);
  await waitFor(zoneActive, 8000, 'the zone turns active again');
  assert.equal((await api('PATCH', `/sessions/${s.id}/resume`)).status, 200);
  await waitFor(async () => (await sessionOf(s.id)).configuration.port === newPort, 5000, 'the link points at the new port');
  const MORE = 64 * 1024;
  sendTotal = MORE;
  await new Promise((r) => setTimeout(r, 600)); // the restarted node hears of the resume with its next state
  const c3 = vless('127.0.0.2', newPort, s.configuration.path ?? '/vless', s.id, up);
  await c3.closed;
  assert.equal(c3.received(), MORE, 'the restarted node carried the transfer');
  await countersReach(s.id, before.uploaded_bytes + up.length, before.downloaded_bytes + MORE, 'the restarted node\'s bytes counted on top');

  // 4b) A hung node (SIGSTOP: it sends nothing and closes nothing, as a host gone from the network
  // does): its channel, silent for CHANNEL_SILENT_MS, is closed as lost and the node is down
  // NODE_LOST_SECONDS later, its last contact still inside the up window. Resumed, it reconnects.
  nodeProc!.kill('SIGSTOP');
  const hungAt = Date.now();
  try {
    await waitFor(async () => !(await zoneActive()), 15_000, 'the zone turns inactive while the node is hung');
    console.log(`zone inactive ${Date.now() - hungAt} ms after SIGSTOP`);
    const hung = nodeListed();
    assert.deepEqual([hung.up, hung.stopped_at], [false, null]);
    assert.ok(Date.now() - Date.parse(hung.last_contact!) < NODE_UP_SECONDS * 1000, `down with its last contact ${hung.last_contact} within the up window`);
    assert.match(srv.stdout() + srv.stderr(), /node channel silent for 3 s/);
  } finally {
    nodeProc!.kill('SIGCONT');
  }
  await waitFor(zoneActive, 8000, 'the zone turns active again once the node is resumed');

  // 5) A clean stop (SIGTERM): the node says so after its last report and is down at once, not
  // 10 s after its last contact: the zone inactive, no new session placed on it, `node list` says
  // stopped and when. Started again, it is up and no longer stopped.
  const stoppedAt = Date.now();
  const exited = new Promise((r) => nodeProc!.once('exit', r));
  nodeProc!.kill('SIGTERM');
  await exited;
  await waitFor(async () => !(await zoneActive()), 5000, 'the zone turns inactive at once after a clean stop');
  console.log(`zone inactive ${Date.now() - stoppedAt} ms after SIGTERM`);
  assert.equal((await api('POST', '/sessions', { client_id: 'p', zone: 'br-sao' })).status, 422);
  assert.match(cli(['node', 'list', '--data-dir', dir]).stdout, /^sao-1  br-sao  stopped \d{4}-\d\d-\d\dT[\d:.]+Z  last contact \d{4}-/m);
  const sao1 = nodeListed;
  assert.equal(sao1().up, false);
  assert.ok(Date.parse(sao1().stopped_at!) >= stoppedAt - 1000, 'stopped_at is the time of the stop');
  await startNode(added.stdout.trim(), nodeDir);
  await waitFor(zoneActive, 8000, 'the zone turns active again after the clean stop');
  assert.deepEqual([sao1().up, sao1().stopped_at], [true, null]);
  assert.equal((await api('POST', '/sessions', { client_id: 'p', zone: 'br-sao' })).status, 201);
  const last = new Promise((r) => nodeProc!.once('exit', r));
  nodeProc!.kill('SIGTERM'); // the next tests run nodes of their own in the zone
  await last;
});

test('the node channel refuses API tokens and unknown node tokens; node run refuses bad flags', async () => {
  const status = (token: string) =>
    new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v2/node/channel`, { headers: { authorization: `Bearer ${token}` } });
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.on('open', () => {
        resolve(101);
        ws.terminate();
      });
      ws.on('error', () => resolve(-1));
    });
  assert.equal(await status(owner), 401, 'an API token is not a node token');
  assert.equal(await status('vadn_' + 'x'.repeat(43)), 401);
  const noToken = cli(['node', 'run', '--control', `http://127.0.0.1:${port}`]);
  assert.equal(noToken.status, 2);
  assert.match(noToken.stderr, /node run needs --token NODE_TOKEN/);
  const apiToken = cli(['node', 'run', '--control', `http://127.0.0.1:${port}`, '--token', owner]);
  assert.equal(apiToken.status, 2);
  assert.match(apiToken.stderr, /--token takes a node token \(vadn_\.\.\., what `node add` printed\), not an API token \(vad_\.\.\.\)/);
  const badUrl = cli(['node', 'run', '--control', 'ftp://x', '--token', 'vadn_abc']);
  assert.equal(badUrl.status, 2);
  assert.match(badUrl.stderr, /--control takes http\(s\):\/\/ or ws\(s\):\/\/ URLs/);
  const badEgress = cli(['node', 'run', '--control', `http://127.0.0.1:${port}`, '--token', 'vadn_abc', '--egress', 'everything']);
  assert.equal(badEgress.status, 2);
  assert.match(badEgress.stderr, /--egress takes public-only, lan or allow-all/);
});

test('node run without a reachable control plane keeps carrying its sessions (from --egress-address); its counts arrive afterwards; node remove stops it', async () => {
  const added = cli(['node', 'add', '--name', 'sao-2', '--zone', 'br-sao', '--public-host', '127.0.0.2', '--data-dir', dir]);
  assert.equal(added.status, 0, added.stderr);
  const nodeDir = tempDir('vad-node2-');
  dirs.push(nodeDir);
  const wsPort = await startNode(added.stdout.trim(), nodeDir, undefined, ['--egress-address', '127.0.0.3']);
  await waitFor(zoneActive, 8000, 'the zone turns active');
  const made = await api('POST', '/sessions', { client_id: 'q', zone: 'br-sao', reusable: true });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  const s = made.json;
  assert.equal(s.configuration.port, wsPort);
  await new Promise((r) => setTimeout(r, 600));

  // The control plane goes away; a whole transfer runs through the node meanwhile.
  srv.kill('SIGTERM');
  await srv.exited;
  const TOTAL = 20 * 32 * 1024;
  sendTotal = TOTAL;
  const up = Buffer.from('offline');
  const c = vless('127.0.0.2', wsPort, s.configuration.path ?? '/vless', s.id, up);
  await Promise.race([c.closed, new Promise((_r, reject) => setTimeout(() => reject(new Error('the offline transfer did not finish')), 10_000))]);
  assert.equal(c.received(), TOTAL, 'carried with no control plane');
  assert.equal(lastRemote, '127.0.0.3', 'outbound connections leave from --egress-address');
  srv = await serve(dir, ['--port', String(port), '--quiet']);
  await countersReach(s.id, up.length, TOTAL, 'the offline counts arrive once the control plane is back');

  // Removal from the catalogue: the node cuts its connections and stops.
  sendTotal = Infinity;
  const c2 = vless('127.0.0.2', wsPort, s.configuration.path ?? '/vless', s.id, up);
  await waitFor(() => c2.received() > 0, 5000, 'a transfer flows');
  const exited = new Promise<number | null>((r) => nodeProc!.once('exit', (code) => r(code)));
  const removed = cli(['node', 'remove', 'sao-2', '--data-dir', dir]);
  assert.equal(removed.status, 0, removed.stderr);
  const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('timeout'), 5000))]);
  assert.equal(code, 0, `node run exits after its removal:\n${nodeOut}`);
  await Promise.race([c2.closed, new Promise((_r, reject) => setTimeout(() => reject(new Error('the connection was not cut')), 2000))]);
  assert.match(nodeOut, /node removed from the catalogue; stopped/);
  nodeProc = null;
});

test('node run on PostgreSQL: two serve instances, pause on the other instance, failover after kill -9 without loss, and from a hung instance', async () => {
  const pg: PgServer = await startPostgres();
  const url = pg.url();
  const [pa, pb] = [await freePort(), await freePort()];
  const da = tempDir('vad-nra-');
  const db = tempDir('vad-nrb-');
  dirs.push(da, db);
  let a: ServeProcess | undefined;
  let b: ServeProcess | undefined;
  try {
    [a, b] = await Promise.all([serve(da, ['--database', url, '--port', String(pa), '--quiet']), serve(db, ['--database', url, '--port', String(pb), '--quiet'])]);
    const tok = cli(['token', 'create', '--customer', 'pgco', '--role', 'owner', '--database', url]);
    assert.equal(tok.status, 0, tok.stderr);
    const pgOwner = tok.stdout.trim();
    const call = async (srvp: ServeProcess, method: string, path: string, body?: unknown) => {
      await new Promise((r) => setTimeout(r, 100));
      const res = await fetch(`${srvp.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${pgOwner}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, json: text ? JSON.parse(text) : undefined };
    };
    const added = cli(['node', 'add', '--name', 'pg-1', '--zone', 'br-sao', '--public-host', '127.0.0.2', '--database', url]);
    assert.equal(added.status, 0, added.stderr);
    const nodeDir = tempDir('vad-node3-');
    dirs.push(nodeDir);
    // A first in the list: the node connects there; B is its failover.
    const wsPort = await startNode(added.stdout.trim(), nodeDir, `http://127.0.0.1:${pa},http://127.0.0.1:${pb}`);
    await waitFor(async () => (await call(b!, 'GET', '/zones')).json.zones.find((z: { code: string }) => z.code === 'br-sao')?.has_active_nodes === true, 8000, 'zone active on B');
    const made = await call(b, 'POST', '/sessions', { client_id: 'r', zone: 'br-sao', reusable: true });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    const s = made.json;
    assert.equal(s.configuration.address, '127.0.0.2');
    assert.equal(s.configuration.port, wsPort);
    await new Promise((r) => setTimeout(r, 600));

    // Pause on B, while the node is connected to A: A hears it (NOTIFY) and the node cuts at once.
    const up = Buffer.from('through pg');
    sendTotal = Infinity;
    const c2 = vless('127.0.0.2', wsPort, s.configuration.path ?? '/vless', s.id, up);
    await waitFor(() => c2.received() > 64 * 1024, 5000, 'the second transfer flows');
    const paused = await call(b, 'PATCH', `/sessions/${s.id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    const pausedAt = Date.now();
    const cutAt = await Promise.race([c2.closed, new Promise<number>((r) => setTimeout(() => r(-1), 5000))]);
    assert.notEqual(cutAt, -1, 'the pause cut the connection');
    assert.ok(cutAt - pausedAt <= 1000, `cut ${cutAt - pausedAt} ms after the pause`);
    console.log(`PostgreSQL: pause cut the node's connection ${cutAt - pausedAt} ms after the API answered`);
    const resumed = await call(b, 'PATCH', `/sessions/${s.id}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.json));
    // The cut connection's last counts arrive with the node's next report (every 500 ms).
    await new Promise((r) => setTimeout(r, 1500));
    const counted = (await call(b, 'GET', `/sessions/${s.id}`)).json;

    // A paced transfer; A (the node's control plane) is killed with -9 in the middle of it.
    const TOTAL = 60 * 32 * 1024;
    sendTotal = TOTAL;
    const c1 = vless('127.0.0.2', wsPort, s.configuration.path ?? '/vless', s.id, up);
    await waitFor(async () => (await call(b!, 'GET', `/sessions/${s.id}`)).json.downloaded_bytes > counted.downloaded_bytes, 5000, 'counters on B');
    a.kill('SIGKILL');
    await a.exited;
    a = undefined;
    await c1.closed;
    assert.equal(c1.received(), TOTAL);
    let last: any;
    await waitFor(
      async () => {
        last = (await call(b!, 'GET', `/sessions/${s.id}`)).json;
        return last.downloaded_bytes === counted.downloaded_bytes + TOTAL && last.uploaded_bytes === counted.uploaded_bytes + up.length;
      },
      15_000,
      'counters equal to the bytes moved after the failover',
    ).catch(() => assert.fail(`counters ${last?.uploaded_bytes}/${last?.downloaded_bytes}, before ${counted.uploaded_bytes}/${counted.downloaded_bytes}, moved ${up.length}/${TOTAL}`));

    // A hung control plane (SIGSTOP: B answers nothing and closes nothing, as a host gone from the
    // network does): the node hears nothing for CHANNEL_SILENT_MS and connects to A (started
    // again), which counts its next transfer. Without that it would stay on B's open socket.
    a = await serve(da, ['--database', url, '--port', String(pa), '--quiet']);
    const onA = new RegExp(`connected to the control plane.*127\\.0\\.0\\.1:${pa}`);
    b.kill('SIGSTOP');
    const hungAt = Date.now();
    const since = nodeOut.length;
    try {
      await waitFor(() => onA.test(nodeOut.slice(since)), 10_000, 'the node connects to A while B is hung');
      console.log(`PostgreSQL: the node connected to A ${Date.now() - hungAt} ms after B hung`);
      assert.match(nodeOut.slice(since), /the control plane sent nothing for 3 s/);
      const base = (await call(a, 'GET', `/sessions/${s.id}`)).json;
      const MORE = 64 * 1024;
      sendTotal = MORE;
      const c3 = vless('127.0.0.2', wsPort, s.configuration.path ?? '/vless', s.id, up);
      await c3.closed;
      assert.equal(c3.received(), MORE);
      await waitFor(async () => (await call(a!, 'GET', `/sessions/${s.id}`)).json.downloaded_bytes === base.downloaded_bytes + MORE, 15_000, 'A counts the transfer made while B is hung');
      assert.equal((await call(a, 'GET', '/zones')).json.zones.find((z: { code: string }) => z.code === 'br-sao')?.has_active_nodes, true);
    } finally {
      b.kill('SIGCONT');
    }
  } finally {
    nodeProc?.kill('SIGKILL');
    nodeProc = null;
    a?.kill('SIGKILL');
    b?.kill('SIGKILL');
    await pg.destroy();
  }
});

test('node run to an https control plane: verified with --control-ca (its self-signed certificate), refused without it; links of a loopback node stay clear text', async () => {
  const tdir = tempDir('vad-noderun-tls-');
  dirs.push(tdir);
  const tport = await freePort();
  const tsrv = await serve(tdir, ['--port', String(tport), '--tls', 'on', '--quiet']);
  let child: ChildProcess | null = null;
  try {
    assert.match(tsrv.baseUrl, /^https:/);
    const tOwner = printedToken(tsrv.stdout())!;
    const added = cli(['node', 'add', '--name', 'tls-1', '--zone', 'br-sao', '--public-host', '127.0.0.2', '--data-dir', tdir]);
    assert.equal(added.status, 0, added.stderr);
    const run = (extra: string[]) => {
      let out = '';
      const c = spawn(
        NODE,
        [CLI, 'node', 'run', '--control', `https://127.0.0.1:${tport}`, '--token', added.stdout.trim(), '--host', '127.0.0.2', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--relay-port', 'off', '--data-dir', tempDir('vad-node-tls-'), ...extra],
        { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
      );
      c.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
      c.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
      return { c, out: () => out };
    };
    // Without the CA: the certificate is not trusted, the node never gets in (it keeps retrying).
    const untrusted = run([]);
    child = untrusted.c;
    await waitFor(() => /self-signed certificate|unable to verify|certificate/i.test(untrusted.out()), 8000, 'a certificate error in the node log');
    untrusted.c.kill('SIGKILL');
    // A wrong pin: refused before anything (the token included) is sent.
    const wrongPin = run(['--control-pin', 'ab'.repeat(32)]);
    child = wrongPin.c;
    await waitFor(() => /does not match --control-pin; nothing was sent/.test(wrongPin.out()), 8000, 'the wrong pin refused');
    assert.doesNotMatch(wrongPin.out(), /connected to the control plane/);
    wrongPin.c.kill('SIGKILL');
    // The right pin (the certificate's SHA-256 over its DER): connects, no CA needed.
    const certPem = readFileSync(`${tdir}/tls/self-signed-cert.pem`, 'utf8');
    const pin = new X509Certificate(certPem).fingerprint256.replace(/:/g, '').toLowerCase();
    const pinned = run(['--control-pin', pin.replace(/(..)(?!$)/g, '$1:')]);
    child = pinned.c;
    await waitFor(() => /connected to the control plane/.test(pinned.out()), 8000, 'the node connects with --control-pin');
    pinned.c.kill('SIGKILL');
    // Plain text beyond loopback is refused outright; the pin must be 64 hex digits.
    const plain = cli(['node', 'run', '--control', 'http://192.168.1.20:8787', '--token', added.stdout.trim(), '--host', '127.0.0.2', '--data-dir', tempDir('vad-node-tls-')]);
    assert.equal(plain.status, 2);
    assert.match(plain.stderr, /must use TLS \(https:\/\/\) beyond loopback/);
    const badPin = cli(['node', 'run', '--control', `https://127.0.0.1:${tport}`, '--control-pin', 'xyz', '--token', added.stdout.trim(), '--host', '127.0.0.2', '--data-dir', tempDir('vad-node-tls-')]);
    assert.equal(badPin.status, 2);
    assert.match(badPin.stderr, /64 hex digits/);
    const trusted = run(['--control-ca', `${tdir}/tls/self-signed-cert.pem`]);
    child = trusted.c;
    await waitFor(() => /connected to the control plane/.test(trusted.out()), 8000, 'the node connects with --control-ca');
    const listed = () => cli(['node', 'list', '--data-dir', tdir]).stdout;
    await waitFor(() => /^tls-1 {2}br-sao {2}up /m.test(listed()), 8000, 'the node is up');
    // A session placed on it: the link points at the node, in clear text: the node listens on
    // loopback, where its TLS is off by default (auto), whatever the control plane's TLS.
    const ca = readFileSync(`${tdir}/tls/self-signed-cert.pem`, 'utf8');
    const made = await new Promise<{ status: number; json: any }>((resolve, reject) => {
      const body = JSON.stringify({ client_id: 't', zone: 'br-sao' });
      const req = httpsRequest(`${tsrv.baseUrl}/sessions`, { method: 'POST', ca, headers: { authorization: `Bearer ${tOwner}`, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(made.status, 201, JSON.stringify(made.json));
    assert.equal(made.json.configuration.address, '127.0.0.2');
    assert.equal(made.json.configuration.security, 'none');
  } finally {
    child?.kill('SIGKILL');
    tsrv.kill('SIGKILL');
    await tsrv.exited;
  }
});
