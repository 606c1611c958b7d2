// The store (store/store.ts): what revokeToken answers, and the counter flush's prepared statement.
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
