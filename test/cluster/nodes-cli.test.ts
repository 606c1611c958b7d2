// The cluster through the real command line: two `vpn-access serve --database URL` processes on
// one throwaway PostgreSQL, `token` and `node` commands with --database (and `node` on a data
// folder too), and session placement: a zone without an up node answers 422 zone_unavailable;
// a node in contact within 10 s (touchNode, as the future `node run` will) makes the zone active
// on every instance, and new sessions point at the least-loaded up node's public host and port.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { PgStore } from '../../server/store/pg/store.ts';
import { Store } from '../../server/store/store.ts';
import { openDatabase } from '../../server/store/db.ts';
import { printedToken, serve, type ServeProcess } from '../helpers/cli.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { CLI, NODE, ROOT, removeDir, tempDir, waitFor } from '../helpers/server.ts';

let pgServer: PgServer;
let url: string;
let store: PgStore;
let a: ServeProcess;
let b: ServeProcess;
let owner: string;
const dirs: string[] = [];

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_') || k.startsWith('NODE_TEST')) delete env[k];
  const r = spawnSync(NODE, [CLI, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

before(async () => {
  pgServer = await startPostgres();
  url = pgServer.url();
  const dirA = tempDir('vad-cla-');
  const dirB = tempDir('vad-clb-');
  dirs.push(dirA, dirB);
  // VPN_ACCESS_DATABASE would do too; the flag is what docs/cluster.md shows.
  [a, b] = await Promise.all([serve(dirA, ['--database', url, '--quiet']), serve(dirB, ['--database', url, '--quiet'])]);
  store = await PgStore.open(url);
  const made = cli(['token', 'create', '--customer', 'acme', '--role', 'owner', '--database', url]);
  assert.equal(made.status, 0, made.stderr);
  owner = made.stdout.trim();
});

after(async () => {
  a?.kill();
  b?.kill();
  await Promise.all([a?.exited, b?.exited]);
  await store?.close();
  await pgServer?.destroy();
  for (const d of dirs) removeDir(d);
});

async function api(srv: ServeProcess, method: string, path: string, body?: unknown, token = owner): Promise<{ status: number; json: any }> {
  const res = await fetch(`${srv.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

test('two serve processes on one database: a session made on A is read on B; token create and revoke from the command line', async () => {
  // Both started at once on the empty database: exactly one made (and printed) the first owner token.
  assert.equal([a, b].filter((p) => printedToken(p.stdout()) !== undefined).length, 1);
  const created = await api(a, 'POST', '/sessions', { client_id: 'cli-1', zone: 'de-fra' });
  assert.equal(created.status, 201);
  const onB = await api(b, 'GET', `/sessions/${created.json.id}/status`);
  assert.equal(onB.status, 200);
  assert.equal(onB.json.client_id, 'cli-1');

  const agent = cli(['token', 'create', '--customer', 'acme', '--role', 'agent', '--database', url]).stdout.trim();
  assert.equal((await api(b, 'GET', '/zones', undefined, agent)).status, 200);
  const listed = cli(['token', 'list', '--json', '--database', url]);
  assert.equal(listed.status, 0, listed.stderr);
  const rows = JSON.parse(listed.stdout) as { id: string; prefix: string; role: string }[];
  const row = rows.find((t) => agent.startsWith(t.prefix) && t.role === 'agent')!;
  const revoked = cli(['token', 'revoke', row.id, '--database', url]);
  assert.equal(revoked.status, 0, revoked.stderr);
  await waitFor(async () => (await api(a, 'GET', '/zones', undefined, agent)).status === 401 && (await api(b, 'GET', '/zones', undefined, agent)).status === 401, 3000, 'both refuse the revoked token');
});

test('node add prints only the token; a zone with no up node is unavailable; touched nodes take new sessions, least loaded first', async () => {
  const added = cli(['node', 'add', '--name', 'sao-1', '--zone', 'br-sao', '--public-host', '127.0.0.2', '--database', url]);
  assert.equal(added.status, 0, added.stderr);
  assert.match(added.stdout, /^vadn_[A-Za-z0-9_-]{43}\n$/, 'only the node token on standard output');
  assert.equal(cli(['node', 'add', '--name', 'sao-1', '--zone', 'br-sao', '--public-host', 'x', '--database', url]).status, 2, 'names are unique');
  assert.equal(cli(['node', 'add', '--name', 'bad name', '--zone', 'br-sao', '--public-host', 'x', '--database', url]).status, 2);
  const token2 = cli(['node', 'add', '--name', 'sao-2', '--zone', 'br-sao', '--public-host', '127.0.0.3', '--database', url]).stdout.trim();
  const node1 = (await store.findNodeByToken(added.stdout.trim()))!;
  const node2 = (await store.findNodeByToken(token2))!;
  assert.equal(node1.name, 'sao-1');

  // Never in contact: down, and the zone has no active node.
  assert.match(cli(['node', 'list', '--database', url]).stdout, /^sao-1 {2}br-sao {2}down {2}last contact never/m);
  const zone = async (srv: ServeProcess) => (await api(srv, 'GET', '/zones')).json.zones.find((z: { code: string }) => z.code === 'br-sao');
  assert.equal((await zone(a)).has_active_nodes, false);
  const refused = await api(a, 'POST', '/sessions', { client_id: 'p', zone: 'br-sao' });
  assert.equal(refused.status, 422);
  assert.equal(refused.json.error.code, 'zone_unavailable');

  // In contact now (what `node run` will do every second): up on every instance.
  assert.ok(await store.touchNode(node1.id, { vless_ws_port: 18443 }));
  assert.equal((await zone(a)).has_active_nodes, true);
  assert.equal((await zone(b)).has_active_nodes, true);
  assert.match(cli(['node', 'list', '--database', url]).stdout, /^sao-1 {2}br-sao {2}up {2}last contact \d{4}-\d\d-\d\dT/m);
  const first = await api(b, 'POST', '/sessions', { client_id: 'p', zone: 'br-sao' });
  assert.equal(first.status, 201);
  assert.equal(first.json.configuration.address, '127.0.0.2');
  assert.equal(first.json.configuration.port, 18443);
  assert.match(first.json.configuration_link, /@127\.0\.0\.2:18443\?/);
  assert.equal((await api(a, 'GET', `/sessions/${first.json.id}`)).json.configuration.address, '127.0.0.2', 'the placement is read on A too');

  // Two up nodes: the one with fewer sessions gets the next.
  assert.ok(await store.touchNode(node2.id, { vless_ws_port: 18444 }));
  const second = await api(a, 'POST', '/sessions', { client_id: 'p', zone: 'br-sao' });
  assert.equal(second.json.configuration.address, '127.0.0.3');
  assert.deepEqual((await store.sessionsOnNode(node2.id)).map((s) => s.id), [second.json.id]);

  // Zones listing `local` are always active and prefer this instance's own data plane.
  const local = await api(a, 'POST', '/sessions', { client_id: 'p', zone: 'de-fra' });
  assert.equal(local.json.configuration.address, '127.0.0.1');

  assert.ok(await store.touchNode(node1.id)); // sao-1 up when sao-2 goes
  const removed = cli(['node', 'remove', 'sao-2', '--database', url]);
  assert.equal(removed.status, 0, removed.stderr);
  assert.equal(await store.placementOf(second.json.id), node1.id, 'its sessions move to the zone\'s up node');
  assert.equal((await api(a, 'GET', `/sessions/${second.json.id}`)).json.configuration.address, '127.0.0.2', 'and their links follow');
  assert.equal(cli(['node', 'remove', 'sao-2', '--database', url]).status, 2);
  assert.doesNotMatch(cli(['node', 'list', '--database', url]).stdout, /sao-2/);
  assert.match(cli(['node', 'run']).stderr, /node run needs --control/);
});

test('node add, list and remove on a data folder (SQLite), and a touched node makes its zone active there too', () => {
  const dir = tempDir('vad-nodes-');
  dirs.push(dir);
  const added = cli(['node', 'add', '--name', 'syd-9', '--zone', 'au-syd', '--public-host', 'syd.example.net', '--data-dir', dir]);
  assert.equal(added.status, 0, added.stderr);
  assert.match(added.stdout, /^vadn_[A-Za-z0-9_-]{43}\n$/);
  assert.match(cli(['node', 'list', '--data-dir', dir]).stdout, /^syd-9 {2}au-syd {2}down {2}last contact never {2}clock not reported yet {2}syd\.example\.net$/m);
  const sqlite = new Store(openDatabase(dir));
  try {
    const node = sqlite.findNodeByToken(added.stdout.trim())!;
    assert.deepEqual(sqlite.activeNodeZones(), []);
    assert.ok(sqlite.touchNode(node.id));
    assert.deepEqual(sqlite.activeNodeZones(), ['au-syd']);
    assert.deepEqual(sqlite.upNodes('au-syd').map((n) => n.name), ['syd-9']);
    // Its report says its clock is 12 s behind the control plane's.
    sqlite.setNodeFacts(node.id, { relay_port: null, relay_pcs: null, tls: false, tls_pcs: null, clock_skew_ms: -12_000 });
  } finally {
    sqlite.db.close();
  }
  assert.match(cli(['node', 'list', '--data-dir', dir]).stdout, /^syd-9 {2}au-syd {2}up {2}last contact \d{4}-[^ ]+ {2}clock 12 s behind the control plane {2}syd\.example\.net$/m);
  assert.equal(cli(['node', 'remove', 'syd-9', '--data-dir', dir]).status, 0);
  assert.equal(cli(['node', 'list', '--data-dir', dir]).stdout, 'no nodes\n');
});
