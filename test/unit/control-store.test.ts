// The SQLite Store behind the async store seam (server/store/control.ts): every operation
// answers a Promise of exactly what the Store returns, a failing statement becomes a
// rejection (never a synchronous throw into an async caller), tokenGeneration follows the
// Store's, and the SQLite migration 3 gives the catalogue's nodes and placements.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sqliteControlStore } from '../../server/store/control.ts';
import { openDatabase } from '../../server/store/db.ts';
import { Store } from '../../server/store/store.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

test('the SQLite adapter answers Promises of the Store results; errors become rejections', async () => {
  const dir = tempDir('vad-ctl-');
  const store = new Store(openDatabase(dir));
  const data = sqliteControlStore(store);
  try {
    assert.equal(data.kind, 'sqlite');
    const count = data.countCustomers();
    assert.ok(count instanceof Promise);
    assert.equal(await count, 0);
    const before = data.tokenGeneration;
    const { token, info } = await data.createToken('acme', 'owner');
    assert.equal(data.tokenGeneration, before + 1, 'tokenGeneration is the Store\'s');
    assert.deepEqual(await data.findToken(token), store.findToken(token));
    const row = await data.insertSession({ id: 's-1', customer_id: info.customer_id, client_id: 'c', zone: 'de-fra', reusable: true, created_at: '2026-01-01T00:00:00.000Z' });
    assert.deepEqual(await data.getSession('s-1'), row);
    // A constraint violation (the same id again) rejects instead of throwing synchronously.
    const dup = data.insertSession({ id: 's-1', customer_id: info.customer_id, client_id: 'c', zone: 'de-fra', reusable: true, created_at: '2026-01-01T00:00:00.000Z' });
    assert.ok(dup instanceof Promise);
    await assert.rejects(dup, /UNIQUE/);

    // Nodes: added down, up once touched, placement and removal.
    const { token: nodeToken, node } = await data.addNode({ name: 'n-1', zone: 'br-sao', public_host: 'n1.example.net' });
    assert.match(nodeToken, /^vadn_/);
    assert.equal(await data.findNodeByToken(token), undefined, 'an API token is not a node token');
    assert.equal((await data.findNodeByToken(nodeToken))!.id, node.id);
    assert.equal(node.up, false);
    assert.deepEqual(await data.activeNodeZones(), []);
    assert.ok(await data.touchNode(node.id, { vless_ws_port: 443 }));
    assert.deepEqual((await data.upNodes('br-sao')).map((n) => [n.name, n.up, n.vless_ws_port]), [['n-1', true, 443]]);
    await data.placeSession('s-1', node.id);
    assert.equal(await data.placementOf('s-1'), node.id);
    assert.deepEqual((await data.placedNodes(['s-1', 'other'])).map((p) => [p.session_id, p.name]), [['s-1', 'n-1']]);
    assert.equal((await data.removeNode('n-1'))!.id, node.id);
    assert.equal(await data.placementOf('s-1'), undefined);
    assert.deepEqual(await data.listNodes(), []);
  } finally {
    await data.close();
    removeDir(dir);
  }
});
