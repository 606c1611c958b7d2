// Crash repair of node sessions, and read-your-writes on nodes. Real `vpn-access node run`
// processes (127.0.0.2 and 127.0.0.3, both in br-sao) killed with SIGKILL, control planes in this
// process (SQLite; or two instances on one throwaway PostgreSQL), raw VLESS over TCP to a loopback
// echo, the event streams read over HTTP:
//  - a node killed with a connection open: within ~20 s its session is idle (reusable) or ended
//    (one-shot), session_end is on every stream once, the session is moved to the zone's other
//    node, and a max_sessions=1 client connects another session through that node;
//  - a node killed and restarted at once (a new boot id): its sessions are repaired at once;
//  - read-your-writes: a creation, a resume or a limits change answered by one instance holds for
//    the very next connection through a node attached to another instance, also right after the
//    node restarted (its first connection once its channel is up again);
//  - through the channel spoken by the test: a node back as the same process keeps its sessions;
//    a new process's journalled reports (up to its boot_seq) after a silent repair add their bytes
//    but not their lifecycle, also for a session moved to another node meanwhile.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, test } from 'node:test';
import WebSocket from 'ws';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { openRaw, type RawStream } from '../helpers/sse.ts';
import { CLI, NODE, ROOT, removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openVlessEcho, startTcpEcho } from '../dataplane/helpers/targets.ts';

const dirs: string[] = [];
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) removeDir(d);
});
const dir = (p: string) => {
  const d = tempDir(p);
  dirs.push(d);
  return d;
};

const childEnv = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_') || k.startsWith('NODE_TEST')) delete env[k];
  return env;
};

interface NodeProc {
  child: ChildProcess;
  host: string;
  tcpPort: number;
  out(): string;
  /** Resolves once the node's channel to a control plane is open. */
  connected(): Promise<void>;
  kill9(): Promise<void>;
}

/** `vpn-access node run` on `host`, raw VLESS over TCP on a free port; resolves once it listens. */
function runNodeProc(controls: string[], token: string, host: string, dataDir: string): Promise<NodeProc> {
  let out = '';
  const child = spawn(
    NODE,
    [CLI, 'node', 'run', '--control', controls.join(','), '--token', token, '--host', host, '--port', '0', '--vless-tcp-port', '0', '--proxy-port', 'off', '--relay-port', 'off', '--egress', 'allow-all', '--data-dir', dataDir],
    { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node run did not start:\n${out}`)), 20_000);
    const check = () => {
      const m = /node listening: VLESS ws [^,]+, tcp (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      resolve({
        child,
        host,
        tcpPort: Number(m[1]),
        out: () => out,
        connected: () => waitFor(() => /connected to the control plane/.test(out), 10_000, 'the node connects'),
        kill9: async () => {
          child.kill('SIGKILL');
          await exited;
          children.delete(child);
        },
      });
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node run exited (${code}):\n${out}`));
    });
  });
}

/** Whether a connection for `id` through the node is relayed (the echo answers); closed unless kept. */
async function relayed(node: NodeProc, id: string, echoPort: number, keep = false) {
  const conn = await openVlessEcho(node.tcpPort, id, echoPort, node.host);
  const ok = conn.got() >= 4;
  if (!keep || !ok) {
    conn.s.destroy();
    await new Promise((r) => setTimeout(r, 200)); // the node sees the close
  }
  return { ok, conn };
}

/** Session events of `id` of one type on a stream, so far. */
const count = (s: RawStream, id: string, type: string) => s.events().filter((e) => e.session_id === id && e.event_type === type).length;

async function setup(database?: string) {
  const serveOne = () =>
    startServer({ dataDir: dir('vad-crash-cp-'), ...(database ? { database } : {}), port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  const a = await serveOne();
  const b = database ? await serveOne() : a;
  const owner = (await a.services.data.createToken('crash', 'owner')).token;
  const one = await a.services.data.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const two = await a.services.data.addNode({ name: 'sao-2', zone: 'br-sao', public_host: '127.0.0.3' });
  const dirs = { one: dir('vad-crash-n1-'), two: dir('vad-crash-n2-') };
  // sao-1 attached to A, sao-2 to B (the same instance on SQLite).
  const start = {
    one: () => runNodeProc([a.origin], one.token, '127.0.0.2', dirs.one),
    two: () => runNodeProc([b.origin], two.token, '127.0.0.3', dirs.two),
  };
  const n1 = await start.one();
  const n2 = await start.two();
  const echo = await startTcpEcho();
  const callA = (method: string, path: string, body?: unknown) => callApi(a.baseUrl, owner, method, path, body);
  const callB = (method: string, path: string, body?: unknown) => callApi(b.baseUrl, owner, method, path, body);
  await waitFor(async () => (await a.services.data.upNodes('br-sao')).length === 2, 10_000, 'both nodes up');
  const streams = [await openRaw(`${a.baseUrl}/sessions/events`, { authorization: `Bearer ${owner}` })];
  if (b !== a) streams.push(await openRaw(`${b.baseUrl}/sessions/events`, { authorization: `Bearer ${owner}` }));
  const close = async () => {
    for (const s of streams) s.close();
    for (const c of children) c.kill('SIGKILL');
    await echo.close();
    if (b !== a) await b.close();
    await a.close();
  };
  const nodes: Record<string, NodeProc> = { 'sao-1': n1, 'sao-2': n2 };
  return { a, b, callA, callB, nodes, start, echo, streams, close };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** The session as instance `call` shows it. */
const sessionOf = async (call: Setup['callA'], id: string) => (await call('GET', `/sessions/${id}`)).json;

/**
 * kill -9 of the node carrying a reusable session with a connection open: idle within 20 s, its
 * session_end once on every stream, moved to the other node, where a max_sessions=1 client then
 * connects another session. Returns the name of the node left.
 */
async function killedWithConnectionOpen(t: Setup): Promise<string> {
  const { callA, callB, echo, streams } = t;
  assert.equal((await callB('PATCH', '/customer/limits/client', { max_sessions: 1 })).status, 200);
  const made = await callB('POST', '/sessions', { client_id: 'm', zone: 'br-sao', reusable: true });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  const s = made.json;
  const dead = t.nodes[s.node];
  const left = s.node === 'sao-1' ? 'sao-2' : 'sao-1';
  const open = await relayed(dead, s.id, echo.port, true);
  assert.ok(open.ok, `the connection through ${s.node} is relayed`);
  await waitFor(async () => (await sessionOf(callA, s.id)).status === 'active', 5000, 'active');

  await dead.kill9();
  const killedAt = Date.now();
  await waitFor(async () => (await sessionOf(callA, s.id)).status === 'idle', 25_000, 'the session goes idle');
  const took = Date.now() - killedAt;
  console.log(`session idle ${took} ms after kill -9 of its node`);
  assert.ok(took <= 20_000, `idle after ${took} ms`);
  for (const st of streams) await waitFor(() => count(st, s.id, 'session_end') >= 1, 5000, 'session_end on the stream');
  const moved = await sessionOf(callB, s.id);
  assert.equal(moved.node, left, 'moved to the zone\'s up node');
  assert.equal(moved.configuration.address, t.nodes[left].host, 'its link names the new node');

  // max_sessions=1: the dead node's session no longer counts.
  const other = await callA('POST', '/sessions', { client_id: 'm', zone: 'br-sao', reusable: true });
  assert.equal(other.status, 201);
  assert.equal(other.json.node, left);
  assert.ok((await relayed(t.nodes[left], other.json.id, echo.port)).ok, 'another session of the max_sessions=1 client connects through the other node');
  await waitFor(async () => (await sessionOf(callA, other.json.id)).status === 'idle', 8000, 'its connection ended (after the reconnection grace)');
  // The moved session connects through its new node.
  assert.ok((await relayed(t.nodes[left], s.id, echo.port)).ok, `the moved session connects through ${left}:\n${t.nodes[left].out().slice(-2000)}`);
  assert.equal((await callB('DELETE', '/customer/limits/client')).status, 204);

  await new Promise((r) => setTimeout(r, 4000)); // several sweeps on every instance; the new node's session ends
  for (const st of streams) assert.equal(count(st, s.id, 'session_end'), 2, 'the repair\'s session_end once, then the new node\'s own');
  return left;
}

/** kill -9 and an immediate restart of the node carrying a one-shot session: ended at once (new boot id). */
async function restartedAtOnce(t: Setup, name: string): Promise<NodeProc> {
  const { callA, callB, echo, streams } = t;
  const made = await callA('POST', '/sessions', { client_id: 'o', zone: 'br-sao', reusable: false });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  const s = made.json;
  assert.equal(s.node, name);
  const open = await relayed(t.nodes[name], s.id, echo.port, true);
  assert.ok(open.ok);
  await waitFor(async () => (await sessionOf(callB, s.id)).status === 'active', 5000, 'active');
  await t.nodes[name].kill9();
  const killedAt = Date.now();
  const again = await (name === 'sao-1' ? t.start.one() : t.start.two());
  t.nodes[name] = again;
  await waitFor(async () => (await sessionOf(callB, s.id)).status === 'ended', 10_000, 'the one-shot session ends');
  const took = Date.now() - killedAt;
  console.log(`one-shot session ended ${took} ms after kill -9 and restart of its node`);
  assert.ok(took < 10_000, `ended after ${took} ms, before the node could count as silent`);
  for (const st of streams) await waitFor(() => count(st, s.id, 'session_end') === 1, 5000, 'session_end on the stream');
  await new Promise((r) => setTimeout(r, 3000));
  for (const st of streams) assert.equal(count(st, s.id, 'session_end'), 1, 'once');
  // The restarted node does not bring it back.
  assert.equal((await sessionOf(callA, s.id)).status, 'ended');
  return again;
}

/** Read-your-writes through `node` (attached to A): writes answered by B hold for the next connection. */
async function readYourWrites(t: Setup, node: NodeProc, name: string): Promise<void> {
  const { callB, echo } = t;
  // A creation answered by B: the first connection at once.
  const made = await callB('POST', '/sessions', { client_id: `ryw-${name}`, zone: 'br-sao', reusable: true });
  assert.equal(made.status, 201);
  // Placed on the least-loaded up node: make sure it is this one.
  if (made.json.node !== name) return assert.fail(`placed on ${made.json.node}, expected ${name}`);
  assert.ok((await relayed(node, made.json.id, echo.port)).ok, 'connected right after the 201');
  // Paused, then resumed on B: the next connection at once.
  assert.equal((await callB('PATCH', `/sessions/${made.json.id}/pause`)).status, 200);
  assert.equal((await relayed(node, made.json.id, echo.port)).ok, false, 'refused right after the pause');
  assert.equal((await callB('PATCH', `/sessions/${made.json.id}/resume`)).status, 200);
  assert.ok((await relayed(node, made.json.id, echo.port)).ok, 'connected right after the resume');
  // A session cap lowered below what it used: refused at once.
  await waitFor(async () => (await sessionOf(callB, made.json.id)).downloaded_bytes > 0, 5000, 'counted');
  assert.equal((await callB('PATCH', '/customer/limits/session', { downloaded_bytes: 1 })).status, 200);
  assert.equal((await relayed(node, made.json.id, echo.port)).ok, false, 'refused right after the cap was lowered');
  assert.equal((await callB('DELETE', '/customer/limits/session')).status, 204);
}

test('SQLite: a node killed with a connection open, a node restarted at once, read-your-writes after the restart', async () => {
  const t = await setup();
  try {
    await readYourWrites(t, t.nodes['sao-1'], 'sao-1');
    const left = await killedWithConnectionOpen(t);
    const restarted = await restartedAtOnce(t, left);
    await restarted.connected();
    await waitFor(async () => (await t.a.services.data.upNodes('br-sao')).some((n) => n.name === left), 5000, 'the restarted node is up');
    await readYourWrites(t, restarted, left);
  } finally {
    await t.close();
  }
});

test('PostgreSQL, two instances: repairs once across instances, read-your-writes from the other instance, also after a node restart', async () => {
  const pg = await startPostgres();
  const t = await setup(pg.url());
  try {
    // sao-1 is attached to A; B answers the writes.
    await readYourWrites(t, t.nodes['sao-1'], 'sao-1');
    const left = await killedWithConnectionOpen(t);
    const restarted = await restartedAtOnce(t, left);
    await restarted.connected();
    await waitFor(async () => (await t.a.services.data.upNodes('br-sao')).some((n) => n.name === left), 5000, 'the restarted node is up');
    // The writes answered by the instance the restarted node is not attached to.
    await readYourWrites(left === 'sao-1' ? t : { ...t, callB: t.callA }, restarted, left);
  } finally {
    await t.close();
    await pg.destroy();
  }
});

/** A node's channel spoken by the test itself: reports as it chooses, acks collected. */
async function fakeNode(origin: string, token: string, boot: string, bootSeq: number) {
  const ws = new WebSocket(`${origin.replace(/^http/, 'ws')}/v2/node/channel`, { headers: { authorization: `Bearer ${token}` } });
  const acks: number[] = [];
  ws.on('message', (raw) => {
    const m = JSON.parse(String(raw));
    if (m.type === 'ack') acks.push(m.seq);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const report = (seq: number, counters: Record<string, unknown> = {}, events: unknown[] = []) =>
    ws.send(JSON.stringify({ type: 'report', seq, ports: { vless_ws_port: 9 }, counters, events, ...(seq === 0 ? { boot, boot_seq: bootSeq } : {}) }));
  report(0);
  await waitFor(() => acks.length > 0, 5000, 'the hello ack');
  return {
    report,
    applied: (seq: number) => waitFor(() => acks.includes(seq), 5000, `report ${seq} acknowledged`),
    close: () => ws.terminate(),
  };
}

test('a restarted node\'s late reports for a session repaired and moved while it was silent: their bytes count, their lifecycle does not', async () => {
  const srv = await startServer({ dataDir: dir('vad-crash-late-'), port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  const owner = (await srv.services.data.createToken('late', 'owner')).token;
  const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
  const x = await srv.services.data.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const y = await srv.services.data.addNode({ name: 'sao-2', zone: 'br-sao', public_host: '127.0.0.3' });
  const nx = await fakeNode(srv.origin, x.token, 'x-boot-1', 0);
  const ny = await fakeNode(srv.origin, y.token, 'y-boot-1', 0);
  const contact = setInterval(() => ny.report(0), 500);
  const stream = await openRaw(`${srv.baseUrl}/sessions/events`, { authorization: `Bearer ${owner}` });
  try {
    const s = (await call('POST', '/sessions', { client_id: 'l', zone: 'br-sao', reusable: true })).json;
    assert.equal(s.node, 'sao-1');
    const ev = (type: string, up = 0, down = 0) => ({ customerId: 'x', sessionId: s.id, type, duration: 1, uploaded_bytes: up, downloaded_bytes: down });
    nx.report(1, { [s.id]: { up: 10, down: 20, status: 'active', connections: 1 } }, [ev('session_start')]);
    await nx.applied(1);
    assert.equal((await call('GET', `/sessions/${s.id}`)).json.status, 'active');
    // sao-1 dies: silent for 15 s (its last contact set back), the sweep repairs and moves.
    nx.close();
    srv.services.sqlite!.store.db.prepare('UPDATE nodes SET last_contact = ? WHERE id = ?').run(new Date(Date.now() - 16_000).toISOString(), x.node.id);
    await waitFor(async () => (await call('GET', `/sessions/${s.id}`)).json.status === 'idle', 5000, 'repaired by the sweep');
    assert.equal((await call('GET', `/sessions/${s.id}`)).json.node, 'sao-2');
    await waitFor(() => count(stream, s.id, 'session_end') === 1, 5000, 'the repair\'s session_end');
    // sao-1 comes back as a new process with what its previous one journalled (reports 2 and 3).
    const again = await fakeNode(srv.origin, x.token, 'x-boot-2', 3);
    again.report(2, { [s.id]: { up: 5, down: 7, status: 'active', connections: 2 } }, [ev('session_stats', 15, 27), ev('session_heartbeat')]);
    again.report(3, { [s.id]: { up: 1, down: 1, status: 'idle' } }, [ev('session_end', 16, 28)]);
    await again.applied(3);
    const after = (await call('GET', `/sessions/${s.id}`)).json;
    assert.deepEqual([after.uploaded_bytes, after.downloaded_bytes], [16, 28], 'the late bytes count');
    assert.equal(after.status, 'idle');
    assert.equal(after.node, 'sao-2');
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(
      stream.events().filter((e) => e.session_id === s.id).map((e) => e.event_type),
      ['session_start', 'session_stats', 'session_end', 'session_stats'],
      'the repair\'s events once; of the late ones only the stats',
    );
    again.close();
  } finally {
    clearInterval(contact);
    stream.close();
    ny.close();
    await srv.close();
  }
});

test('a node back as the same process keeps its sessions; back as a new one after a silent repair, its journalled lifecycle is dropped up to boot_seq, its new reports count', async () => {
  const srv = await startServer({ dataDir: dir('vad-crash-boot-'), port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  const owner = (await srv.services.data.createToken('boot', 'owner')).token;
  const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
  const x = await srv.services.data.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const stream = await openRaw(`${srv.baseUrl}/sessions/events`, { authorization: `Bearer ${owner}` });
  const types = (id: string) => stream.events().filter((e) => e.session_id === id).map((e) => e.event_type);
  try {
    let nx = await fakeNode(srv.origin, x.token, 'boot-1', 0);
    const s = (await call('POST', '/sessions', { client_id: 'b', zone: 'br-sao', reusable: true })).json;
    const ev = (type: string) => ({ customerId: 'x', sessionId: s.id, type, duration: 1, uploaded_bytes: 0, downloaded_bytes: 0 });
    nx.report(1, { [s.id]: { up: 1, down: 2, status: 'active' } }, [ev('session_start')]);
    await nx.applied(1);
    // The same process reconnecting (a control-plane failover): nothing is repaired.
    nx.close();
    nx = await fakeNode(srv.origin, x.token, 'boot-1', 0);
    await new Promise((r) => setTimeout(r, 2500)); // a sweep ran
    assert.equal((await call('GET', `/sessions/${s.id}`)).json.status, 'active', 'same process: still active');
    // Silent for 15 s: repaired; the node stays (no other node in the zone to move it to).
    nx.close();
    srv.services.sqlite!.store.db.prepare('UPDATE nodes SET last_contact = ? WHERE id = ?').run(new Date(Date.now() - 16_000).toISOString(), x.node.id);
    await waitFor(async () => (await call('GET', `/sessions/${s.id}`)).json.status === 'idle', 5000, 'repaired by the sweep');
    assert.equal((await call('GET', `/sessions/${s.id}`)).json.node, 'sao-1');
    // Back as a new process: reports 2 and 3 are its previous process's, 4 its own.
    nx = await fakeNode(srv.origin, x.token, 'boot-2', 3);
    nx.report(2, { [s.id]: { up: 10, down: 10, status: 'active' } }, [ev('session_heartbeat')]);
    nx.report(3, { [s.id]: { up: 10, down: 10, status: 'active' } }, [ev('session_stats')]);
    await nx.applied(3);
    let now = (await call('GET', `/sessions/${s.id}`)).json;
    assert.deepEqual([now.status, now.uploaded_bytes, now.downloaded_bytes], ['idle', 21, 22], 'the bytes count, the stale status does not');
    nx.report(4, { [s.id]: { up: 1, down: 1, status: 'active' } }, [ev('session_start')]);
    await nx.applied(4);
    now = (await call('GET', `/sessions/${s.id}`)).json;
    assert.deepEqual([now.status, now.uploaded_bytes], ['active', 22], 'the new process carries it');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(types(s.id), ['session_start', 'session_stats', 'session_end', 'session_stats', 'session_start']);
    nx.close();
  } finally {
    stream.close();
    await srv.close();
  }
});
