// The store (store/store.ts): what revokeToken answers, the counter flush's prepared statement, and
// how a filter's IN list is written (sql/op.ts Where).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Where } from '../../server/store/sql/op.ts';
import { withStore } from '../helpers/server.ts';

test('revokeToken reports the revocation time it stored', (t) => {
  withStore((store) => {
    const { info } = store.createToken('acme', 'agent');
    // Every clock reading is a different millisecond, as it may be under load.
    const real = Date.prototype.toISOString;
    let ms = Date.parse('2026-11-22T10:04:05.000Z');
    t.mock.method(Date.prototype, 'toISOString', () => real.call(new Date(ms++)));
    const revoked = store.revokeToken(info.id);
    t.mock.restoreAll();
    assert.ok(revoked);
    const listed = store.listTokens().find((t) => t.id === info.id);
    assert.equal(revoked.revoked_at, listed?.revoked_at);
    assert.match(revoked.revoked_at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

test('saveRuntime (the counter flush) reuses its prepared statement', (t) => {
  withStore((store) => {
    const { info } = store.createToken('acme', 'owner');
    const row = store.insertSession({ id: 'f0e1d2c3-0000-4000-8000-000000000001', customer_id: info.customer_id, client_id: 'c', zone: 'de-fra', reusable: true, created_at: new Date().toISOString() });
    const patch = (n: number) => ({ status: 'active' as const, uploaded_bytes: n, downloaded_bytes: 2 * n, duration: n, connections: 1 });
    store.saveRuntime(row.id, patch(1));
    const prepare = t.mock.method(store.db, 'prepare');
    for (let i = 2; i < 10; i++) store.saveRuntime(row.id, patch(i));
    assert.equal(prepare.mock.callCount(), 0);
    assert.equal(store.getSession(row.id)?.downloaded_bytes, 18);
  });
});

test('Where.in pads a list to a power of two with its last value: the same rows, a few statement texts', () => {
  const texts = new Set<string>();
  for (let n = 1; n <= 100; n++) {
    const ids = Array.from({ length: n }, (_, i) => `c${i}`);
    const w = new Where().and('customer_id = ?', 'acme').in('client_id', ids);
    texts.add(w.where);
    assert.equal(w.args.length, 1 + 2 ** Math.ceil(Math.log2(n)));
    assert.deepEqual(w.args.slice(0, n + 1), ['acme', ...ids], 'the values in order');
    assert.ok(w.args.slice(n + 1).every((v) => v === ids.at(-1)), 'then the last one again');
  }
  assert.equal(texts.size, 8, '1, 2, 4, ... 128 marks');
  assert.equal(new Where().in('x', []).where, 'FALSE', 'an empty list matches nothing');
  assert.equal(new Where().in('x', undefined).where, '', 'no list: no term');
  withStore((store) => {
    store.createToken('acme', 'owner');
    const w = new Where().in('name', ['nobody', 'other', 'acme']);
    assert.deepEqual(w.args, ['nobody', 'other', 'acme', 'acme']);
    const rows = store.runner.all(`SELECT name FROM customers WHERE ${w.where}`, ...w.args);
    assert.deepEqual(rows, [{ name: 'acme' }], 'a repeated value matches what it matched once');
  });
});
