// Subscriptions in cluster mode: two `serve` instances on one throwaway PostgreSQL.
// A subscription turned on through instance A gives the same URL when read through B, and the
// URL's feed answers on either instance with the client's usable sessions (one placed on a
// data-plane node links to the node's host). Rotation through B makes A's old URL stop working
// on both; turning it off ends it everywhere. The secret is never stored, only its hash.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';

let pg: PgServer;
let a: RunningServer;
let b: RunningServer;
let node: RunningNode;
let owner: string;
const dirs: string[] = [];

async function start(url: string): Promise<RunningServer> {
  const dir = tempDir('vad-pgsub-');
  dirs.push(dir);
  return startServer({ dataDir: dir, database: url, port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
}

before(async () => {
  pg = await startPostgres();
  const url = pg.url();
  [a, b] = [await start(url), await start(url)];
  owner = (await a.services.data.createToken('sub-co', 'owner')).token;
  const added = await a.services.data.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const nodeDir = tempDir('vad-pgsub-node-');
  dirs.push(nodeDir);
  node = await runNode({ controls: [a.origin], token: added.token, host: '127.0.0.2', port: 0, vlessTcpPort: null, proxyPort: null, egress: 'allow-all', dataDir: nodeDir, log: silentLogger });
});
after(async () => {
  await node?.close();
  await a?.close();
  await b?.close();
  await pg?.destroy();
  for (const d of dirs) removeDir(d);
});

const api = (srv: RunningServer, method: string, path: string) => callApi(srv.baseUrl, owner, method, path);
/** The feed at a subscription URL, fetched from the given instance (the URL's path on its origin). */
async function feed(srv: RunningServer, url: string, format = 'base64'): Promise<{ status: number; text: string }> {
  const path = new URL(url).pathname;
  const res = await fetch(`${srv.origin}${path}?format=${format}`);
  return { status: res.status, text: await res.text() };
}

test('a subscription made on one instance works on every instance, with node-placed links; rotate and off apply everywhere', async () => {
  await waitFor(async () => (await api(b, 'GET', '/zones')).json.zones.find((z: { code: string }) => z.code === 'br-sao')?.has_active_nodes === true, 10_000, 'node up');
  const local = await callApi(a.baseUrl, owner, 'POST', '/sessions', { client_id: 'phone', zone: 'de-fra', reusable: true });
  const placed = await callApi(b.baseUrl, owner, 'POST', '/sessions', { client_id: 'phone', zone: 'br-sao', reusable: true });
  assert.equal(local.status, 201);
  assert.equal(placed.status, 201);

  const on = await api(a, 'PUT', '/subscriptions/phone');
  assert.equal(on.status, 200, JSON.stringify(on.json));
  const url: string = on.json.url;
  assert.equal((await api(b, 'GET', '/subscriptions/phone')).json.url.split('/sub/')[1], url.split('/sub/')[1], 'the same secret on B');

  for (const srv of [a, b]) {
    const f = await feed(srv, url);
    assert.equal(f.status, 200);
    const links = Buffer.from(f.text, 'base64').toString('utf8').split('\n').filter(Boolean);
    assert.equal(links.length, 2, links.join('\n'));
    assert.ok(links.some((l) => l.startsWith(`vless://${local.json.id}@`)));
    assert.ok(links.some((l) => l.startsWith(`vless://${placed.json.id}@127.0.0.2:${node.ports.vless_ws_port}`)), 'the node-placed session links to the node');
  }
  // Only the hash of the secret is stored.
  const secret = url.split('/sub/')[1];
  const stored = (await (a.services.data as unknown as { pool: import('pg').Pool }).pool.query('SELECT * FROM subscriptions')).rows;
  assert.equal(stored.length, 1);
  assert.ok(!JSON.stringify(stored).includes(secret), 'no secret in the table');

  // Rotation through B: A's old URL is dead on both instances, the new one works on both.
  const rotated = await api(b, 'PUT', '/subscriptions/phone');
  assert.notEqual(rotated.json.url, url);
  for (const srv of [a, b]) {
    assert.equal((await feed(srv, url)).status, 404);
    assert.equal((await feed(srv, rotated.json.url)).status, 200);
  }
  // Off through A: gone everywhere.
  assert.equal((await api(a, 'DELETE', '/subscriptions/phone')).status, 204);
  assert.equal((await api(b, 'GET', '/subscriptions/phone')).status, 404);
  assert.equal((await feed(b, rotated.json.url)).status, 404);
});
