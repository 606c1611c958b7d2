// Usage history on SQLite with real traffic: raw VLESS over TCP through the data
// plane of a listening server (startServer) to a loopback echo server. The buckets GET /v2/usage
// answers sum to the session counters per session, per client and per customer; the filters
// (client, session, zone, node, range, step) and the errors; tenants are apart; and compaction
// under an injected clock (a day, 90 days, two years ahead) keeps the table bounded while every
// sum still equals the counters.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { echoBytes, startTcpEcho } from './helpers/targets.ts';

const DAY = 86_400_000;
let srv: RunningServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let dir: string;
let owner: string;
let agent: string;
let other: string;
/** The usage history's clock: real time moved by `shift`. */
let shift = 0;
const now = () => Date.now() + shift;

before(async () => {
  dir = tempDir('vad-usage-');
  srv = await startServer({
    dataDir: dir,
    port: 0,
    egress: 'allow-all',
    statsIntervalMs: 300,
    rateLimit: { max: 100_000, windowMs: 60_000 },
    usageHistory: { now, flushMs: 200, compactMs: 0 },
  });
  owner = srv.ownerToken!;
  agent = (await srv.services.data.createToken('default', 'agent')).token;
  other = (await srv.services.data.createToken('globex', 'owner')).token;
  echo = await startTcpEcho();
});
after(async () => {
  await srv?.close();
  await echo?.close();
  if (dir) removeDir(dir);
});

const api = (token: string, path: string) => callApi(srv.baseUrl, token, 'GET', path);

async function session(token: string, client: string, zone = 'de-fra'): Promise<string> {
  const r = await callApi(srv.baseUrl, token, 'POST', '/sessions', { client_id: client, zone, reusable: true });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.id;
}

/** One VLESS connection moving `n` bytes up and the same back (the echo), then closed. */
async function move(id: string, n: number): Promise<void> {
  (await echoBytes(srv.vlessTcpPort!, id, echo.port, n, { fill: 9 })).destroy();
}

async function counters(token: string, id: string): Promise<{ up: number; down: number }> {
  const r = await api(token, `/sessions/${id}/status`);
  assert.equal(r.status, 200);
  return { up: r.json.uploaded_bytes, down: r.json.downloaded_bytes };
}

/** Waits until the stored counters reach what was moved and the history holds all of it. */
async function settled(token: string, id: string, up: number): Promise<{ up: number; down: number }> {
  await waitFor(async () => (await counters(token, id)).down >= up && (await counters(token, id)).up >= up, 10_000, 'counters saved');
  await waitFor(async () => {
    const c = await counters(token, id);
    const u = await api(token, `/usage?session_id=${id}&step=hour&from=${new Date(now() - 2 * DAY).toISOString()}`);
    return u.json.totals.uploaded_bytes === c.up && u.json.totals.downloaded_bytes === c.down;
  }, 10_000, 'history equal to the counters');
  return counters(token, id);
}

const sum = (xs: { up: number; down: number }[]) => xs.reduce((a, b) => ({ up: a.up + b.up, down: a.down + b.down }), { up: 0, down: 0 });
const totalsOf = (j: any) => ({ up: j.totals.uploaded_bytes, down: j.totals.downloaded_bytes });
const bucketSum = (j: any) => ({ up: j.buckets.reduce((a: number, b: any) => a + b.uploaded_bytes, 0), down: j.buckets.reduce((a: number, b: any) => a + b.downloaded_bytes, 0) });

let s1: string, s2: string, s3: string, g1: string;
let c1: { up: number; down: number }, c2: { up: number; down: number }, c3: { up: number; down: number }, cg: { up: number; down: number };

test('buckets sum to the counters per session, per client and per customer; tenants apart', async () => {
  s1 = await session(owner, 'alice');
  s2 = await session(owner, 'alice', 'nl-ams');
  s3 = await session(owner, 'bob');
  g1 = await session(other, 'alice');
  await move(s1, 300_000);
  await move(s2, 120_000);
  await move(s3, 50_000);
  await move(g1, 70_000);
  // s1 again two minutes later (by the history's clock): a second minute bucket
  shift += 2 * 60_000;
  await move(s1, 40_000);
  c1 = await settled(owner, s1, 340_000);
  c2 = await settled(owner, s2, 120_000);
  c3 = await settled(owner, s3, 50_000);
  cg = await settled(other, g1, 70_000);
  // the counters are the payload bytes moved, both ways (the echo)
  assert.deepEqual([c1, c2, c3, cg].map((c) => [c.up, c.down]), [[340_000, 340_000], [120_000, 120_000], [50_000, 50_000], [70_000, 70_000]]);

  // per session, at minute step: two buckets with traffic, every other bucket zero
  const from = new Date(now() - 30 * 60_000).toISOString();
  const one = await api(owner, `/usage?session_id=${s1}&step=minute&from=${from}`);
  assert.equal(one.status, 200, JSON.stringify(one.json));
  assert.equal(one.json.step, 'minute');
  assert.equal(one.json.top_clients, undefined, 'no top_clients with a session filter');
  assert.deepEqual(Object.keys(one.json.buckets[0]).sort(), ['downloaded_bytes', 'start', 'uploaded_bytes']);
  assert.ok(one.json.buckets.length >= 30 && one.json.buckets.length <= 32, `${one.json.buckets.length} buckets`);
  assert.equal(one.json.buckets.filter((b: any) => b.uploaded_bytes > 0).length, 2);
  assert.deepEqual(bucketSum(one.json), c1);
  assert.deepEqual(totalsOf(one.json), c1);
  for (let i = 1; i < one.json.buckets.length; i++) {
    assert.equal(Date.parse(one.json.buckets[i].start) - Date.parse(one.json.buckets[i - 1].start), 60_000);
  }
  assert.equal(one.json.from, one.json.buckets[0].start);

  // per client, per customer (owner and agent alike), top clients
  const alice = await api(owner, '/usage?client_id=alice');
  assert.equal(alice.status, 200);
  assert.deepEqual(totalsOf(alice.json), sum([c1, c2]));
  const all = await api(agent, '/usage');
  assert.equal(all.status, 200, 'agents read the history too');
  assert.deepEqual(totalsOf(all.json), sum([c1, c2, c3]));
  assert.deepEqual(bucketSum(all.json), sum([c1, c2, c3]));
  assert.deepEqual(all.json.top_clients, [
    { client_id: 'alice', uploaded_bytes: c1.up + c2.up, downloaded_bytes: c1.down + c2.down },
    { client_id: 'bob', uploaded_bytes: c3.up, downloaded_bytes: c3.down },
  ]);
  // default range: the last 24 hours, auto step hour (1440 minutes would be over 400 buckets)
  assert.equal(all.json.step, 'hour');
  assert.ok(all.json.buckets.length === 24 || all.json.buckets.length === 25);

  // the other tenant sees only its own; the first tenant's session is unknown to it
  const g = await api(other, '/usage');
  assert.deepEqual(totalsOf(g.json), cg);
  assert.deepEqual(g.json.top_clients, [{ client_id: 'alice', uploaded_bytes: cg.up, downloaded_bytes: cg.down }]);
  const foreign = await api(other, `/usage?session_id=${s1}`);
  assert.equal(foreign.status, 404);
  assert.equal(foreign.json.error.code, 'session_not_found');
});

test('filters: zone, node, range; bad filters are 400 in the error format', async () => {
  assert.deepEqual(totalsOf((await api(owner, '/usage?zone=nl-ams')).json), c2);
  assert.deepEqual(totalsOf((await api(owner, '/usage?zone=de-fra')).json), sum([c1, c3]));
  assert.deepEqual(totalsOf((await api(owner, '/usage?zone=de-fra&client_id=alice')).json), c1);
  assert.deepEqual(totalsOf((await api(owner, '/usage?node=local')).json), sum([c1, c2, c3]));
  assert.deepEqual(totalsOf((await api(owner, '/usage?node=syd-1')).json), { up: 0, down: 0 });
  assert.deepEqual(totalsOf((await api(owner, '/usage?client_id=nobody')).json), { up: 0, down: 0 });
  // a range before any traffic
  const before = await api(owner, `/usage?to=${new Date(now() - 3 * 3_600_000).toISOString()}&from=${new Date(now() - 5 * 3_600_000).toISOString()}`);
  assert.equal(before.status, 200);
  assert.equal(before.json.step, 'minute', '2 hours: minute buckets (120 of them)');
  assert.ok(before.json.buckets.length >= 120 && before.json.buckets.length <= 121);
  assert.deepEqual(totalsOf(before.json), { up: 0, down: 0 });
  // a year: auto step day
  assert.equal((await api(owner, `/usage?from=${new Date(now() - 365 * DAY).toISOString()}`)).json.step, 'day');

  const bad: [string, RegExp][] = [
    ['/usage?step=week', /step/],
    ['/usage?from=yesterday', /from/],
    ['/usage?to=2026-13-01T00:00:00Z', /to/],
    [`/usage?from=${new Date(now()).toISOString()}&to=${new Date(now() - 60_000).toISOString()}`, /from must be before to/],
    ['/usage?client_id=bad%20id', /client_id/],
    ['/usage?zone=DE', /zone/],
    ['/usage?node=..', /node/],
    ['/usage?color=red', /color/],
    [`/usage?step=minute&from=${new Date(now() - 3 * DAY).toISOString()}`, /minute buckets are kept for a day/],
    [`/usage?step=minute&from=${new Date(now() - 12 * 3_600_000).toISOString()}`, /more than 400/],
    [`/usage?step=day&from=${new Date(now() - 1000 * DAY).toISOString()}`, /more than 400/],
  ];
  for (const [path, message] of bad) {
    const r = await api(owner, path);
    assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.code, 'invalid_request');
    assert.match(r.json.error.message, message, path);
    assert.equal(typeof r.json.error.details, 'object');
  }
  const unknown = await api(owner, '/usage?session_id=00000000-0000-4000-8000-000000000000');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json.error.code, 'session_not_found');
  const noToken = await fetch(`${srv.baseUrl}/usage`);
  assert.equal(noToken.status, 401);
});

test('compaction under an injected clock keeps the table bounded and every sum equal to the counters', async () => {
  const usage = srv.services.usage!;
  const rows = () => srv.services.data.usageRowCounts();
  const before = await rows();
  assert.ok(before.minute >= 5, `minute rows: ${JSON.stringify(before)}`);
  const everything = async (token: string, extra = '') => {
    const r = await api(token, `/usage?step=day&from=${new Date(now() - 399 * DAY).toISOString()}${extra}`);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return totalsOf(r.json);
  };

  // two days on: the minute rows become hour rows
  shift += 2 * DAY;
  await usage.compact(2); // a tiny batch: many steps, each one a correct partial rollup
  let n = await rows();
  assert.equal(n.minute, 0, JSON.stringify(n));
  assert.ok(n.hour >= 1 && n.hour <= before.minute, JSON.stringify(n));
  const hourly = await api(owner, `/usage?step=hour&session_id=${s1}&from=${new Date(now() - 3 * DAY).toISOString()}`);
  assert.equal(hourly.status, 200, JSON.stringify(hourly.json));
  assert.deepEqual(totalsOf(hourly.json), c1);
  assert.deepEqual(await everything(owner), sum([c1, c2, c3]));
  assert.deepEqual(await everything(owner, '&client_id=alice'), sum([c1, c2]));
  assert.deepEqual(await everything(other), cg);
  const tooFine = await api(owner, `/usage?step=minute&from=${new Date(now() - 3 * DAY).toISOString()}&to=${new Date(now() - 3 * DAY + 3_600_000).toISOString()}`);
  assert.equal(tooFine.status, 400);
  assert.match(tooFine.json.error.message, /ask step=hour/);

  // 100 days on: hour rows become day rows (one per session and node at most)
  shift += 100 * DAY;
  await usage.compact(3);
  n = await rows();
  assert.equal(n.minute + n.hour, 0, JSON.stringify(n));
  assert.ok(n.day >= 4 && n.day <= 5, JSON.stringify(n)); // 4 sessions, one of them maybe over midnight
  assert.deepEqual(await everything(owner), sum([c1, c2, c3]));
  assert.deepEqual(await everything(owner, `&session_id=${s2}`), c2);
  assert.deepEqual(await everything(other), cg);

  // past the two years the day rows go
  shift += 800 * DAY;
  await usage.compact();
  n = await rows();
  assert.deepEqual(n, { minute: 0, hour: 0, day: 0 });
});

test('usageHistory: false records nothing; the route still answers, with zeros', async () => {
  const { makeServer, auth } = await import('../helpers/server.ts');
  const s = await makeServer({ usageHistory: false });
  try {
    assert.equal(s.services.usage, null);
    const r = await s.app.inject({ url: '/v2/usage?step=hour', headers: auth(s.owner) });
    assert.equal(r.statusCode, 200, r.body);
    const j = JSON.parse(r.body);
    assert.deepEqual(j.totals, { uploaded_bytes: 0, downloaded_bytes: 0 });
    assert.deepEqual(j.top_clients, []);
    assert.ok(j.buckets.length >= 24 && j.buckets.every((b: any) => b.uploaded_bytes === 0 && b.downloaded_bytes === 0));
  } finally {
    await s.close();
  }
});
