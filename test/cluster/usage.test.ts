// Usage history on PostgreSQL in cluster mode, with real traffic: two control-plane
// instances (startServer --database) on one throwaway PostgreSQL, each with its local data
// plane, and a real data-plane node (runNode, in process, listening on 127.0.0.2) reporting to
// instance A over the node channel. Raw VLESS over TCP moves bytes to a loopback echo server:
// one session through both instances at once (both add to the same minute bucket), one through
// the node (its report deltas are recorded as the node's). Either instance answers GET
// /v2/usage with buckets summing to the counters, per session, client, customer and node; both
// instances compacting at once under an injected clock move every row once (SKIP LOCKED).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { echoBytes, startTcpEcho } from '../dataplane/helpers/targets.ts';

const DAY = 86_400_000;
let pg: PgServer;
let a: RunningServer;
let b: RunningServer;
let node: RunningNode;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let owner: string;
const dirs: string[] = [];
let shift = 0;
const now = () => Date.now() + shift;

async function start(url: string): Promise<RunningServer> {
  const dir = tempDir('vad-usage-pg-');
  dirs.push(dir);
  return startServer({
    dataDir: dir,
    database: url,
    port: 0,
    proxyPort: null,
    statsIntervalMs: 300,
    egress: 'allow-all',
    rateLimit: { max: 100_000, windowMs: 60_000 },
    usageHistory: { now, flushMs: 200, compactMs: 0 },
  });
}

before(async () => {
  pg = await startPostgres();
  const url = pg.url();
  a = await start(url);
  b = await start(url);
  owner = (a.ownerToken ?? b.ownerToken)!;
  echo = await startTcpEcho();
  const added = await a.services.data.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const nodeDir = tempDir('vad-usage-node-');
  dirs.push(nodeDir);
  node = await runNode({
    controls: [a.origin],
    token: added.token,
    host: '127.0.0.2',
    port: 0,
    vlessTcpPort: 0,
    proxyPort: null,
    egress: 'allow-all',
    dataDir: nodeDir,
    log: silentLogger,
  });
});
after(async () => {
  await node?.close();
  await a?.close();
  await b?.close();
  await echo?.close();
  await pg?.destroy();
  for (const d of dirs) removeDir(d);
});

const api = (srv: RunningServer, path: string) => callApi(srv.baseUrl, owner, 'GET', path);

async function move(host: string, port: number, id: string, n: number): Promise<void> {
  (await echoBytes(port, id, echo.port, n, { host })).destroy();
}

const totalsOf = (j: any) => ({ up: j.totals.uploaded_bytes, down: j.totals.downloaded_bytes });

async function counters(id: string): Promise<{ up: number; down: number }> {
  const r = await api(b, `/sessions/${id}/status`);
  return { up: r.json.uploaded_bytes, down: r.json.downloaded_bytes };
}

let sa: string, sn: string;

test('on PostgreSQL, local data planes of two instances and a node: buckets sum to the counters on either instance', async () => {
  const made = await callApi(a.baseUrl, owner, 'POST', '/sessions', { client_id: 'carol', zone: 'de-fra', reusable: true });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  sa = made.json.id;
  await waitFor(async () => (await api(b, '/zones')).json.zones.find((z: { code: string }) => z.code === 'br-sao')?.has_active_nodes === true, 10_000, 'the node up');
  const viaNode = await callApi(b.baseUrl, owner, 'POST', '/sessions', { client_id: 'dave', zone: 'br-sao', reusable: true });
  assert.equal(viaNode.status, 201, JSON.stringify(viaNode.json));
  sn = viaNode.json.id;
  assert.equal(viaNode.json.configuration.address, '127.0.0.2');

  // the same session through both instances at once, then the node's session
  await Promise.all([move('127.0.0.1', a.vlessTcpPort!, sa, 200_000), move('127.0.0.1', b.vlessTcpPort!, sa, 150_000)]);
  // the node learns of its session through its state message: retry until it admits it
  await waitFor(async () => move('127.0.0.2', node.ports.vless_tcp_port!, sn, 90_000).then(() => true, () => false), 15_000, 'a transfer through the node');

  await waitFor(async () => (await counters(sa)).up >= 350_000 && (await counters(sn)).up >= 90_000, 15_000, 'counters of both sessions');
  const ca = await counters(sa);
  const cn = await counters(sn);
  assert.deepEqual([ca.up, ca.down], [350_000, 350_000]);
  assert.ok(cn.up >= 90_000 && cn.down >= 90_000, JSON.stringify(cn));
  // each instance writes its pending additions within 200 ms; the answer is then the same on both
  for (const srv of [a, b]) {
    await waitFor(async () => JSON.stringify(totalsOf((await api(srv, '/usage')).json)) === JSON.stringify({ up: ca.up + cn.up, down: ca.down + cn.down }), 10_000, 'customer totals');
  }
  const bySession = await api(b, `/usage?session_id=${sa}&step=minute&from=${new Date(now() - 20 * 60_000).toISOString()}`);
  assert.equal(bySession.status, 200, JSON.stringify(bySession.json));
  assert.deepEqual(totalsOf(bySession.json), ca);
  assert.deepEqual(totalsOf((await api(a, `/usage?session_id=${sn}`)).json), cn);
  assert.deepEqual(totalsOf((await api(a, '/usage?client_id=carol')).json), ca);
  assert.deepEqual(totalsOf((await api(b, '/usage?node=sao-1')).json), cn);
  assert.deepEqual(totalsOf((await api(b, '/usage?node=local')).json), ca);
  assert.deepEqual(totalsOf((await api(b, '/usage?zone=br-sao')).json), cn);
  const all = (await api(a, '/usage')).json;
  assert.deepEqual(all.top_clients.map((c: any) => c.client_id).sort(), ['carol', 'dave']);
  // one row per (session, node, minute): both instances added into the same 'local' rows
  const rows = await a.services.data.usageRowCounts();
  assert.ok(rows.minute >= 2 && rows.minute <= 4, JSON.stringify(rows));

  // Metrics (GET /metrics) count the same bytes: the node's on the instance it reports
  // to (A), labelled with its name and zone; the local data planes' on each instance, summed.
  const relayed = async (srv: RunningServer, labels: string) => {
    const text = await (await fetch(`${srv.origin}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`vad_relayed_bytes_total{${labels}}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };
  assert.equal(await relayed(a, 'zone="br-sao",node="sao-1",direction="up"'), cn.up);
  assert.equal(await relayed(a, 'zone="br-sao",node="sao-1",direction="down"'), cn.down);
  assert.equal(await relayed(b, 'zone="br-sao",node="sao-1",direction="up"'), 0);
  assert.equal((await relayed(a, 'zone="de-fra",node="local",direction="up"')) + (await relayed(b, 'zone="de-fra",node="local",direction="up"')), ca.up);
});

test('on PostgreSQL, two instances compacting at once move every row once; the table stays bounded', async () => {
  const ca = await counters(sa);
  const cn = await counters(sn);
  const expect = { up: ca.up + cn.up, down: ca.down + cn.down };
  const everything = async (srv: RunningServer) => totalsOf((await api(srv, `/usage?step=day&from=${new Date(now() - 399 * DAY).toISOString()}`)).json);
  // nothing moves any more: two days on, the minute rows are rolled into hours by both instances
  shift += 2 * DAY;
  await Promise.all([a.services.usage!.compact(1), b.services.usage!.compact(1)]);
  let rows = await a.services.data.usageRowCounts();
  assert.equal(rows.minute, 0, JSON.stringify(rows));
  assert.ok(rows.hour >= 2, JSON.stringify(rows));
  assert.deepEqual(await everything(a), expect);
  assert.deepEqual(totalsOf((await api(b, `/usage?step=hour&node=sao-1&from=${new Date(now() - 3 * DAY).toISOString()}`)).json), cn);

  shift += 100 * DAY;
  await Promise.all([a.services.usage!.compact(1), b.services.usage!.compact(1)]);
  rows = await b.services.data.usageRowCounts();
  assert.equal(rows.minute + rows.hour, 0, JSON.stringify(rows));
  assert.ok(rows.day >= 2 && rows.day <= 4, JSON.stringify(rows));
  assert.deepEqual(await everything(b), expect);

  shift += 800 * DAY;
  await a.services.usage!.compact();
  assert.deepEqual(await a.services.data.usageRowCounts(), { minute: 0, hour: 0, day: 0 });
});
