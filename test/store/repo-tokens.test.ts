// The tokens repository on both databases: issue, find, list in order, revoke by id, token or
// unique prefix, and the token-change hook.
import assert from 'node:assert/strict';
import { tokenOps as ops } from '../../server/store/repos/tokens.ts';
import { eachDialect } from '../helpers/dialects.ts';

eachDialect('tokens: issue, find, list, revoke', async (db) => {
  assert.equal(await db.run(ops.countCustomers()), 0);
  const a = await db.run(ops.createToken('acme', 'owner'));
  const b = await db.run(ops.createToken('acme', 'agent'));
  const c = await db.run(ops.createToken('other', 'owner'));
  assert.equal(await db.run(ops.countCustomers()), 2);
  assert.equal(a.info.customer_id, b.info.customer_id);
  assert.notEqual(a.info.customer_id, c.info.customer_id);
  assert.match(a.token, /^vad_/);
  assert.deepEqual({ ...(await db.run(ops.findToken(a.token))) }, a.info);
  assert.equal(await db.run(ops.findToken('vad_nope')), undefined);
  // Only the hash is stored.
  const stored = await db.sql<{ hash: string }>('SELECT hash FROM tokens WHERE id = ?', a.info.id);
  assert.notEqual(stored[0].hash, a.token);
  assert.deepEqual((await db.run(ops.listTokens())).map((t) => t.id), [a.info.id, b.info.id, c.info.id]);

  assert.equal(await db.run(ops.isTokenActive(b.info.id)), true);
  const revoked = await db.run(ops.revokeToken(b.info.prefix));
  assert.equal(revoked?.id, b.info.id);
  assert.equal(await db.run(ops.isTokenActive(b.info.id)), false);
  assert.equal(await db.run(ops.findToken(b.token)), undefined);
  assert.equal(await db.run(ops.revokeToken(b.info.id)), undefined, 'already revoked');
  assert.equal((await db.run(ops.revokeToken(c.token)))?.id, c.info.id, 'by the plain token');

  // A second first request of a customer finds the row the first made.
  const e1 = await db.run(ops.ensureCustomer('new'));
  const e2 = await db.run(ops.ensureCustomer('new'));
  assert.deepEqual([e1.created, e2.created, e1.id === e2.id], [true, false, true]);
});
