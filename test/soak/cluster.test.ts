// The cluster soak: two control planes (`serve --database`, B handing out raw-TCP links, A
// WebSocket ones) on one throwaway PostgreSQL, three nodes in three zones (`node run` on
// 127.0.0.2/.3/.4), real clients: Debian's v2ray over each session's link, and curl through the
// nodes' proxies (CONNECT tunnels, some geo-targeted with -cc-XX, relayed node to node). Every
// session has an origin of its own (test/helpers/soak-origin.ts) that records the bytes it saw.
// During the activity (connection churn, creations, pauses and resumes on random instances, geo
// requests) a node and a control plane are killed with -9 and restarted on their data folders,
// PostgreSQL is killed with -9 and restarted, and near the end another node is killed with -9 in
// the middle of a transfer and left dead (restarted only before the counters are read). Then:
//  - every session's counters equal the bytes its origin saw, within 1 MiB per kill;
//  - the event stream of each instance (followed with Last-Event-ID across the restart) carried
//    every event id once, in order;
//  - no answer was a 500 (or none at all) outside the outage windows, and none waited more than
//    2 s there (plus the measuring client's own scheduling delay: test/helpers/soak-figures.ts);
//  - no session is `active` 25 s after every client left (crash repair of the dead node's).
// It runs VAD_SOAK_SECONDS of activity (default 120: about 3 minutes with setup and the quiet
// period); every loop is bounded by a count and by the clock. All traffic stays on loopback.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { controlPlane, nodeProcess, vpnAccess, type ControlPlane, type NodeProcess } from '../helpers/cluster-procs.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir } from '../helpers/server.ts';
import { followEvents, type StreamFollower } from '../helpers/sse-follow.ts';
import { requireV2ray } from '../dataplane/helpers/v2ray.ts';
import { soakFigures, type Answer, type Window } from '../helpers/soak-figures.ts';
import { openSession, transfer, type SoakSession, type Traffic } from '../helpers/soak-traffic.ts';

const MiB = 1024 * 1024;
const SOAK_MS = Math.max(30, Number(process.env.VAD_SOAK_SECONDS ?? 120)) * 1000;
/** Which kills to make (a comma list of node, cp, pg; default all three): a subset tells which one loses what. */
const KILLS = new Set((process.env.VAD_SOAK_KILLS ?? 'node,cp,pg').split(',').map((k) => k.trim()));
const MAX_SESSIONS = 14;
const TRAFFIC_WORKERS = 3;
/**
 * How long after a restart its outage window still excuses a 500 or a slow answer: the longest
 * reconnection backoff in play (a node to its control planes: 250 ms doubling to 5 s; the
 * instances' PostgreSQL LISTEN connection: 100 ms doubling to 2 s), so a request in that tail
 * waits on a scheduled reconnection, not on a defect.
 */
const MARGIN_MS = 5000;
const QUIET_MS = 25_000;
const ZONES = [
  { code: 'br-sao', name: 'São Paulo', country: 'BR', cities: ['sao paulo'], node: 'sao-1', host: '127.0.0.2' },
  { code: 'nl-ams', name: 'Amsterdam', country: 'NL', cities: ['amsterdam'], node: 'ams-1', host: '127.0.0.3' },
  { code: 'us-nyc', name: 'New York', country: 'US', cities: ['new york'], node: 'nyc-1', host: '127.0.0.4' },
];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(Math.random() * xs.length)];

test('cluster soak: kill -9 of a node, a control plane and PostgreSQL under churn; counters, event streams, answers, latency, no stale active session', { timeout: SOAK_MS + 240_000 }, async (t) => {
  requireV2ray();
  const pg = await startPostgres(t);
  const url = pg.url();
  const work = tempDir('vad-soak-');
  t.after(() => removeDir(work));
  const zonesFile = join(work, 'zones.json');
  writeFileSync(zonesFile, JSON.stringify({ zones: ZONES.map(({ code, name, country, cities }) => ({ code, name, country, cities, nodes: [] })) }));
  const common = ['--database', url, '--zones', zonesFile, '--rate-limit', '1000000/60', '--egress', 'allow-all'];
  // A caches its reads (the default), B does not (--read-cache off): a read on either after a write on the other.
  const a = await controlPlane('A', common);
  const b = await controlPlane('B', [...common, '--link-network', 'tcp', '--read-cache', 'off']);
  const cps = [a, b];
  const nodes = new Map<string, NodeProcess>();
  const sessions: SoakSession[] = [];
  const followers: StreamFollower[] = [];
  t.after(async () => {
    for (const f of followers) f.stop();
    await Promise.all(sessions.map((s) => s.close()));
    for (const n of nodes.values()) await n.kill9();
    for (const cp of cps) await cp.kill9();
    for (const d of [...cps.map((c) => c.dir), ...[...nodes.values()].map((n) => n.dir)]) removeDir(d);
  });
  await Promise.all([a.start(), b.start()]);
  const token = vpnAccess(['token', 'create', '--customer', 'soak', '--role', 'owner', '--database', url]);
  for (const z of ZONES) {
    const n = await nodeProcess({ name: z.node, zone: z.code, host: z.host, database: url, controls: [a.baseUrl, b.baseUrl].map((u) => u.replace(/\/v2$/, '')) });
    nodes.set(z.node, n);
    await n.start();
  }

  const answers: Answer[] = [];
  const windows: Window[] = [];
  const kills: string[] = [];
  const call = async (cp: ControlPlane, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const at = Date.now();
    const t0 = performance.now();
    let status = 0;
    let json: any;
    try {
      const res = await fetch(`${cp.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      status = res.status;
      const text = await res.text();
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = text;
      }
    } catch {
      status = 0; // refused or timed out: the instance is down
    }
    answers.push({ at, cp: cp.name, what: `${method} ${path.replace(/[0-9a-f-]{36}/, ':id')}`, status, ms: performance.now() - t0 });
    return { status, json };
  };

  // Every zone active (each node in contact), seen from both instances.
  const zonesUp = async (cp: ControlPlane) => {
    const r = await call(cp, 'GET', '/zones');
    return r.status === 200 && ZONES.every((z) => r.json.zones.find((x: { code: string }) => x.code === z.code)?.has_active_nodes === true);
  };
  for (let i = 0; i < 150 && !((await zonesUp(a)) && (await zonesUp(b))); i++) await sleep(200);
  assert.ok((await zonesUp(a)) && (await zonesUp(b)), 'the three zones are active on both instances');

  for (const cp of cps) {
    followers.push(
      followEvents(`${cp.baseUrl}/sessions/events`, token, {
        onAnswer: (status, ms) => answers.push({ at: Date.now() - ms, cp: cp.name, what: 'GET /sessions/events', status, ms }),
      }),
    );
  }

  const traffic: Traffic = { nodes, transfers: 0, failed: 0, dataLatency: [] };
  let serial = 0;
  const create = async (cp: ControlPlane, zone = pick(ZONES)!): Promise<SoakSession | undefined> => {
    const r = await call(cp, 'POST', '/sessions', { client_id: `soak-${serial++ % 5}`, zone: zone.code, reusable: true });
    if (r.status !== 201) return undefined;
    const s = await openSession(r.json, cp.name);
    sessions.push(s);
    return s;
  };
  for (let i = 0; i < 6; i++) assert.ok(await create(cps[i % 2], ZONES[i % 3]), 'the first sessions are created');
  await sleep(1000); // the nodes hear of them with their next state

  // The test process measures every wait: its own event-loop delay is printed beside them.
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const start = Date.now();
  const end = start + SOAK_MS;
  const running = () => Date.now() < end;
  const live = () => sessions.filter((s) => !s.paused);

  const trafficWorker = async () => {
    for (let i = 0; i < 100_000 && running(); i++) {
      const s = pick(live());
      if (!s) await sleep(200);
      else await transfer(traffic, s, { zones: ZONES });
    }
  };
  const apiWorker = async () => {
    for (let i = 0; i < 100_000 && running(); i++) {
      await sleep(150 + Math.random() * 350);
      const cp = pick(cps)!;
      const roll = Math.random();
      if (roll < 0.12 && sessions.length < MAX_SESSIONS) {
        const s = await create(cp);
        if (s) await sleep(600); // read-your-writes within a second: the node acts on it by then
      } else if (roll < 0.32) {
        const s = pick(live());
        if (s && (await call(cp, 'PATCH', `/sessions/${s.id}/pause`)).status === 200) s.paused = true;
      } else if (roll < 0.55) {
        const s = pick(sessions.filter((x) => x.paused));
        if (s && (await call(cp, 'PATCH', `/sessions/${s.id}/resume`)).status === 200) s.paused = false;
      } else if (roll < 0.85) {
        const s = pick(sessions);
        if (s) await call(cp, 'GET', `/sessions/${s.id}/status`);
      } else await call(cp, 'GET', roll < 0.93 ? '/zones' : '/sessions?limit=50');
    }
  };

  const chaos = async () => {
    const until = async (frac: number) => {
      for (let i = 0; i < 100_000 && Date.now() < start + frac * SOAK_MS; i++) await sleep(100);
    };
    await until(0.2);
    if (KILLS.has('node')) await killNode();
    await until(0.45);
    if (KILLS.has('cp')) await killControlPlane();
    await until(0.7);
    if (KILLS.has('pg')) await killPostgres();
    await until(0.9);
    if (KILLS.has('node')) await killNodeForGood();
  };
  // 1) kill -9 of the node carrying the most sessions, while a session on it moves data fast.
  const killNode = async () => {
    const victim = [...nodes.values()].sort((x, y) => sessions.filter((s) => s.node === y.name).length - sessions.filter((s) => s.node === x.name).length)[0];
    const fast = live().find((s) => s.node === victim.name && s.v2ray) ?? live().find((s) => s.node === victim.name);
    const burst = fast ? transfer(traffic, fast, { zones: ZONES, mode: fast.v2ray ? 'vless' : 'proxy', download: 64 * MiB, rate: 8_000_000 }) : Promise.resolve();
    await sleep(1500);
    const nodeWindow: Window = { what: `node ${victim.name}`, from: Date.now(), to: Infinity, node: victim.name };
    windows.push(nodeWindow);
    await victim.kill9();
    kills.push(`node ${victim.name}`);
    await sleep(2000);
    await victim.start();
    nodeWindow.to = Date.now();
    await burst;
  };
  // 4) kill -9 of another node in the middle of a transfer, not restarted: its sessions must not
  // stay `active` (crash repair once it has been silent for a while).
  const killNodeForGood = async () => {
    const first = windows.find((w) => w.node)?.node;
    const fast = pick(sessions.filter((s) => s.node !== first && nodes.get(s.node)!.running));
    if (!fast) return;
    const victim = nodes.get(fast.node)!;
    const slow = transfer(traffic, fast, { zones: ZONES, mode: fast.v2ray ? 'vless' : 'proxy', download: 64 * MiB, rate: 2_000_000 });
    await sleep(1000);
    windows.push({ what: `node ${victim.name} (not restarted)`, from: Date.now(), to: Infinity, node: victim.name });
    await victim.kill9();
    kills.push(`node ${victim.name} (not restarted)`);
    await slow;
  };
  // 2) kill -9 of control plane A (the nodes' first choice), restarted on its data folder.
  const killControlPlane = async () => {
    const cpWindow: Window = { what: 'control plane A', from: Date.now(), to: Infinity, cp: 'A' };
    windows.push(cpWindow);
    await a.kill9();
    kills.push('control plane A');
    await sleep(1500);
    await a.start();
    cpWindow.to = Date.now();
  };
  // 3) kill -9 of PostgreSQL, restarted on its data folder (crash recovery).
  const killPostgres = async () => {
    const pgWindow: Window = { what: 'PostgreSQL', from: Date.now(), to: Infinity };
    windows.push(pgWindow);
    await pg.kill9();
    kills.push('PostgreSQL');
    await sleep(3000);
    await pg.restart();
    pgWindow.to = Date.now();
  };

  await Promise.all([chaos(), apiWorker(), ...Array.from({ length: TRAFFIC_WORKERS }, trafficWorker)]);
  const activityMs = Date.now() - start;

  // Quiet: every client gone. No session may stay `active` (crash repair gets QUIET_MS).
  await Promise.all(sessions.map((s) => s.closeClient()));
  const quietFrom = Date.now();
  let stale: string[] = [];
  for (let i = 0; i < 200 && Date.now() < quietFrom + QUIET_MS; i++) {
    stale = [];
    for (const s of sessions) {
      const r = await call(b, 'GET', `/sessions/${s.id}/status`);
      if (r.status !== 200 || r.json.status === 'active') stale.push(`${s.id.slice(0, 8)} on ${s.node}: ${r.status === 200 ? r.json.status : r.status}`);
    }
    if (stale.length === 0) break;
    await sleep(1000);
  }
  const quietMs = Date.now() - quietFrom;

  // The node left dead comes back (an operator restarts it): what it journaled before dying
  // may be counted now. Then the counters, once settled (equal over two reads 1.5 s apart).
  for (const n of nodes.values()) if (!n.running) await n.start();
  const counters = new Map<string, { up: number; down: number }>();
  let previous = '';
  for (let i = 0; i < 20; i++) {
    for (const s of sessions) {
      const r = await call(b, 'GET', `/sessions/${s.id}/status`);
      if (r.status === 200) counters.set(s.id, { up: r.json.uploaded_bytes, down: r.json.downloaded_bytes });
    }
    const now = JSON.stringify([...counters]);
    if (now === previous) break;
    previous = now;
    await sleep(1500);
  }

  // The whole event log, replayed by a fresh stream, is what each follower must have got.
  const truth = followEvents(`${b.baseUrl}/sessions/events`, token);
  followers.push(truth);
  const lastOf = (f: StreamFollower) => f.ids().at(-1) ?? 0;
  for (let i = 0; i < 100; i++) {
    const before = truth.ids().length;
    await sleep(300);
    if (truth.ids().length === before && followers.every((f) => lastOf(f) === lastOf(truth))) break;
  }

  loopDelay.disable();
  // What A's read cache answered since its restart (a figure: counter reports update sessions
  // all the time, and each update drops the cached reads of sessions on every instance).
  const metrics = await (await fetch(`${a.baseUrl.replace(/\/v2$/, '')}/metrics`)).text();
  console.log(`  A's read cache since its restart: ${/^vad_read_cache_hits_total (\d+)/m.exec(metrics)?.[1] ?? 'no figure'} hits`);
  const failures = soakFigures({
    sessions, counters, kills, windows, answers, traffic, marginMs: MARGIN_MS,
    followers: cps.map((cp, i) => ({ name: cp.name, ids: followers[i].ids(), connections: followers[i].connections() })),
    truth: truth.ids(), stale, start, activityMs, loopDelayMaxMs: loopDelay.max / 1e6, quietMs, victims: windows.filter((w) => w.node).map((w) => w.node!),
  });
  assert.deepEqual(failures, [], `the soak found:\n${failures.join('\n')}`);
});
