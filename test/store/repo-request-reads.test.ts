// The one-statement reads of a request on both databases: a customer's three limits records
// (getAllLimits), a creation's checks (getClientAndLimits: the client's record and the limits)
// and a status read (getSessionStatusOf: the session, its client's control, the limits). Each
// answers what the separate reads answer, follows every change made after a first read (SQLite
// answers them from its read cache), and keeps customers apart.
import assert from 'node:assert/strict';
import { clientOps } from '../../server/store/repos/clients.ts';
import { limitOps } from '../../server/store/repos/limits.ts';
import { requestReadOps as ops } from '../../server/store/repos/request-reads.ts';
import { sessionOps } from '../../server/store/repos/sessions.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';

const session = (customer: string, client: string, id: string) => ({ id, customer_id: customer, client_id: client, zone: 'de-fra', reusable: true, created_at: new Date().toISOString() });

/** The separate reads a status read replaces. */
async function separately(db: DialectDb, customer: string, id: string) {
  const row = await db.run(sessionOps.getSessionOf(customer, id));
  if (!row) return undefined;
  return { row, control: await db.run(clientOps.getClientControl(customer, row.client_id)), limits: await db.run(limitOps.getAllLimits(customer)) };
}

eachDialect('getAllLimits: every scope set, none set, per customer', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  const globex = (await db.run(tokenOps.ensureCustomer('globex'))).id;
  assert.deepEqual(await db.run(limitOps.getAllLimits(acme)), {}, 'nothing set: no scope');
  await db.run(limitOps.patchLimits(acme, 'global', { downloaded_bytes: 1000, reset_period: 'day' }));
  await db.run(limitOps.patchLimits(acme, 'session', { default_lifetime_seconds: 60 }));
  assert.deepEqual(await db.run(limitOps.getAllLimits(acme)), { global: { downloaded_bytes: 1000, reset_period: 'day' }, session: { default_lifetime_seconds: 60 } });
  await db.run(limitOps.patchLimits(acme, 'client', { max_sessions: 2 }));
  await db.run(limitOps.deleteLimits(acme, 'global'));
  assert.deepEqual(await db.run(limitOps.getAllLimits(acme)), { client: { max_sessions: 2 }, session: { default_lifetime_seconds: 60 } }, 'changes after a first read show');
  assert.deepEqual(await db.run(limitOps.getAllLimits(globex)), {}, "another customer's limits are not these");
  for (const scope of ['global', 'client', 'session'] as const) {
    assert.deepEqual((await db.run(limitOps.getAllLimits(acme)))[scope], await db.run(limitOps.getLimits(acme, scope)), `${scope}: as getLimits reads it`);
  }
});

eachDialect("getClientAndLimits: the client's record (or none) and the customer's limits", async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  const globex = (await db.run(tokenOps.ensureCustomer('globex'))).id;
  assert.deepEqual(await db.run(ops.getClientAndLimits(acme, 'alice')), { client: undefined, limits: {} }, 'no record, no limits');
  await db.run(limitOps.patchLimits(acme, 'session', { default_lifetime_seconds: 60 }));
  assert.deepEqual(await db.run(ops.getClientAndLimits(acme, 'alice')), { client: undefined, limits: { session: { default_lifetime_seconds: 60 } } }, 'the limits without a record');

  await db.run(clientOps.patchClient(acme, 'alice', { disabled: true, expires_at: '2030-01-01T00:00:00.000Z' }));
  await db.run(clientOps.patchClientLimits(acme, 'alice', { uploaded_bytes: 500 }));
  const read = await db.run(ops.getClientAndLimits(acme, 'alice'));
  assert.deepEqual(read.client, await db.run(clientOps.getClient(acme, 'alice')), 'the record as getClient reads it');
  assert.equal(read.client!.disabled, true);
  assert.equal(read.client!.expires_at, '2030-01-01T00:00:00.000Z');
  assert.deepEqual(read.client!.override!.fields, { uploaded_bytes: 500 });
  assert.deepEqual(read.limits, { session: { default_lifetime_seconds: 60 } });

  await db.run(clientOps.patchClient(acme, 'alice', { disabled: false }));
  assert.equal((await db.run(ops.getClientAndLimits(acme, 'alice'))).client!.disabled, false, 'a change after a first read shows');
  assert.equal((await db.run(ops.getClientAndLimits(acme, 'bob'))).client, undefined, "another client's record is not this one's");
  assert.deepEqual(await db.run(ops.getClientAndLimits(globex, 'alice')), { client: undefined, limits: {} }, "another customer's alice is another client");
});

eachDialect("getSessionStatusOf: the session, its client's control and the limits, as the separate reads give them", async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  const globex = (await db.run(tokenOps.ensureCustomer('globex'))).id;
  await db.run(sessionOps.insertSession(session(acme, 'alice', 's-1')));
  await db.run(sessionOps.insertSession(session(globex, 'alice', 's-2')));
  assert.equal(await db.run(ops.getSessionStatusOf(acme, 'nope')), undefined, 'an unknown id');
  assert.equal(await db.run(ops.getSessionStatusOf(acme, 's-2')), undefined, "another customer's session is not found");

  const bare = await db.run(ops.getSessionStatusOf(acme, 's-1'));
  assert.deepEqual(bare, await separately(db, acme, 's-1'), 'no record, no limits');
  assert.equal(bare!.control, undefined);
  assert.deepEqual(bare!.limits, {});
  assert.equal(bare!.row.client_id, 'alice');
  assert.deepEqual(Object.keys(bare!.row).sort(), Object.keys((await db.run(sessionOps.getSessionOf(acme, 's-1')))!).sort(), 'the row has the session columns only');

  await db.run(limitOps.patchLimits(acme, 'client', { downloaded_bytes: 1000, reset_period: 'day' }));
  await db.run(limitOps.patchLimits(acme, 'global', { uploaded_bytes: 9000, reset_period: 'month' }));
  await db.run(clientOps.patchClient(acme, 'alice', { expires_at: '2031-01-01T00:00:00.000Z' }));
  await db.run(clientOps.patchClientLimits(acme, 'alice', { uploaded_bytes: 500 }));
  await db.run(sessionOps.saveRuntime('s-1', { status: 'active', uploaded_bytes: 42, downloaded_bytes: 7 }));
  await db.run(clientOps.resetClientUsage(acme, 'alice'));
  const full = await db.run(ops.getSessionStatusOf(acme, 's-1'));
  assert.deepEqual(full, await separately(db, acme, 's-1'), 'after changes to each table read');
  assert.equal(full!.row.status, 'active');
  assert.equal(full!.row.uploaded_bytes, 42);
  assert.equal(full!.row.expires_at, null, "the session's expires_at, not its client's");
  assert.equal(full!.control!.expires_at, '2031-01-01T00:00:00.000Z');
  assert.deepEqual(full!.control!.limits, { uploaded_bytes: 500 });
  assert.deepEqual(full!.control!.reset && { up: full!.control!.reset.up, down: full!.control!.reset.down }, { up: 42, down: 7 });
  assert.deepEqual(full!.limits, { client: { downloaded_bytes: 1000, reset_period: 'day' }, global: { uploaded_bytes: 9000, reset_period: 'month' } });

  const other = await db.run(ops.getSessionStatusOf(globex, 's-2'));
  assert.deepEqual(other, { row: (await db.run(sessionOps.getSessionOf(globex, 's-2')))!, control: undefined, limits: {} }, "another customer's alice has neither the record nor the limits");
});
