// The clients repository on both databases: a row made by the first change, disabled and
// expiry set and cleared, the limits override merged field by field (null removes, the record
// keeps its id and created_at), removed, a usage reset recording the client's totals, what the
// sessions of each client add up to (all, or those of a list), one client's quota base and a
// period's bases in one read, and customers kept apart.
import assert from 'node:assert/strict';
import { clientOps as ops } from '../../server/store/repos/clients.ts';
import { quotaOps } from '../../server/store/repos/quota.ts';
import { sessionOps } from '../../server/store/repos/sessions.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { usageOps } from '../../server/store/repos/usage.ts';
import { eachDialect } from '../helpers/dialects.ts';
import { ISO_MS_Z } from '../helpers/server.ts';

const session = (customer: string, client: string, id: string) => ({ id, customer_id: customer, client_id: client, zone: 'de-fra', reusable: true, created_at: new Date().toISOString() });

eachDialect('clients: disabled and expiry, the override merged and removed, per customer', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  const globex = (await db.run(tokenOps.ensureCustomer('globex'))).id;
  assert.equal(await db.run(ops.getClient(acme, 'alice')), undefined, 'no row before the first change');
  assert.equal(await db.run(ops.getClientControl(acme, 'alice')), undefined);

  const off = await db.run(ops.patchClient(acme, 'alice', { disabled: true }));
  assert.deepEqual(off, { client_id: 'alice', disabled: true, expires_at: null, override: null, reset: null });
  const exp = await db.run(ops.patchClient(acme, 'alice', { expires_at: '2030-01-01T00:00:00.000Z' }));
  assert.equal(exp.disabled, true, 'a field not sent stays');
  assert.equal(exp.expires_at, '2030-01-01T00:00:00.000Z');
  const on = await db.run(ops.patchClient(acme, 'alice', { disabled: false, expires_at: null }));
  assert.equal(on.disabled, false);
  assert.equal(on.expires_at, null);

  const first = await db.run(ops.patchClientLimits(acme, 'alice', { downloaded_bytes: 1000, reset_period: 'day' }));
  assert.ok(first.override);
  assert.match(first.override.created_at, ISO_MS_Z);
  assert.deepEqual(first.override.fields, { downloaded_bytes: 1000, reset_period: 'day' });
  const merged = await db.run(ops.patchClientLimits(acme, 'alice', { reset_period: null, upload_speed: 5000 }));
  assert.equal(merged.override!.id, first.override.id, 'the override keeps its id');
  assert.equal(merged.override!.created_at, first.override.created_at);
  assert.deepEqual(merged.override!.fields, { downloaded_bytes: 1000, upload_speed: 5000 });
  assert.deepEqual(await db.run(ops.getClientControl(acme, 'alice')), { disabled: false, expires_at: null, limits: { downloaded_bytes: 1000, upload_speed: 5000 }, reset: null });
  assert.deepEqual(await db.run(ops.periodicClientOverrides()), [], 'no reset_period left');

  assert.equal(await db.run(ops.getClient(globex, 'alice')), undefined, 'another customer\'s alice is another client');
  assert.deepEqual((await db.run(ops.listClientRows(acme))).map((r) => r.client_id), ['alice']);
  assert.deepEqual((await db.run(ops.listClientRows(acme, ['alice', 'bob']))).map((r) => r.client_id), ['alice']);
  assert.deepEqual(await db.run(ops.listClientRows(acme, ['bob'])), []);

  assert.equal(await db.run(ops.deleteClientLimits(acme, 'alice')), true);
  assert.equal(await db.run(ops.deleteClientLimits(acme, 'alice')), false, 'nothing left to delete');
  assert.equal((await db.run(ops.getClient(acme, 'alice')))!.override, null);
  const again = await db.run(ops.patchClientLimits(acme, 'alice', { max_sessions: 1 }));
  assert.notEqual(again.override!.id, first.override.id, 'a new override is a new record');
});

eachDialect('clients: what the sessions add up to, a usage reset, one client\'s quota base', async (db) => {
  const acme = (await db.run(tokenOps.ensureCustomer('acme'))).id;
  await db.run(sessionOps.insertSession(session(acme, 'alice', 'a1')));
  await db.run(sessionOps.insertSession(session(acme, 'alice', 'a2')));
  await db.run(sessionOps.insertSession(session(acme, 'bob', 'b1')));
  await db.run(sessionOps.saveRuntime('a1', { status: 'active', uploaded_bytes: 100, downloaded_bytes: 1000 }));
  await db.run(sessionOps.saveRuntime('a2', { status: 'ended', uploaded_bytes: 10, downloaded_bytes: 20 }));
  await db.run(sessionOps.setPaused('b1', true));
  const minute = Date.parse('2026-11-20T10:00:00.000Z');
  await db.run(usageOps.addUsage([{ session_id: 'a1', node: 'local', start: minute, uploaded_bytes: 1, downloaded_bytes: 2 }, { session_id: 'a2', node: 'local', start: minute - 60_000, uploaded_bytes: 1, downloaded_bytes: 2 }]));

  const sums = await db.run(ops.clientSessions(acme));
  const alice = sums.find((s) => s.client_id === 'alice')!;
  const bob = sums.find((s) => s.client_id === 'bob')!;
  assert.deepEqual(alice, { client_id: 'alice', live: 1, active: 1, paused: 0, up: 110, down: 1020, last_traffic: minute + 60_000 }, 'its last traffic ended with its newest minute');
  assert.deepEqual(bob, { client_id: 'bob', live: 1, active: 0, paused: 1, up: 0, down: 0, last_traffic: null });
  assert.deepEqual(await db.run(ops.clientSessions(acme, 'bob')), [bob]);
  assert.deepEqual(await db.run(ops.clientSessions(acme, ['bob', 'nobody'])), [bob], 'a list: only those named, unknown ones left out');
  assert.deepEqual(await db.run(ops.clientSessions(acme, [])), [], 'an empty list names nobody');

  const reset = await db.run(ops.resetClientUsage(acme, 'alice'));
  assert.deepEqual({ ...reset.reset!, at: 'x' }, { at: 'x', up: 110, down: 1020 }, 'the totals at the reset');
  assert.match(reset.reset!.at, ISO_MS_Z);
  const control = (await db.run(ops.getClientControl(acme, 'alice')))!;
  assert.deepEqual(control.reset, { at: Date.parse(reset.reset!.at), up: 110, down: 1020 });

  assert.equal(await db.run(ops.snapshotClientQuotaBase(acme, 'alice', 5000)), 1);
  await db.run(sessionOps.saveRuntime('a1', { uploaded_bytes: 500 }));
  await db.run(ops.snapshotClientQuotaBase(acme, 'alice', 5000));
  assert.deepEqual(await db.run(quotaOps.quotaBase(acme, 'client', 'alice', 5000)), { up: 110, down: 1020 }, 'a fixed period keeps its first base');
  assert.equal(await db.run(quotaOps.quotaBase(acme, 'client', 'bob', 5000)), undefined, 'only that client');
  await db.run(ops.snapshotClientQuotaBase(acme, 'alice', 0, Date.now() - 1000));
  assert.deepEqual(await db.run(quotaOps.quotaBase(acme, 'client', 'alice', 0)), { up: 510, down: 1020 }, 'rolling: totals less the usage history since (none)');
  // Many clients' bases in one read: the period's whole set, or those named.
  await db.run(quotaOps.snapshotQuotaBases(acme, 'client', 7000));
  const all = await db.run(quotaOps.quotaBases(acme, 'client', 7000));
  assert.deepEqual(Object.fromEntries(all), { alice: { up: 510, down: 1020 }, bob: { up: 0, down: 0 } });
  assert.deepEqual([...(await db.run(quotaOps.quotaBases(acme, 'client', 7000, ['bob', 'nobody'])))], [['bob', { up: 0, down: 0 }]]);
  assert.equal((await db.run(quotaOps.quotaBases(acme, 'client', 6999))).size, 0, 'another period');
  assert.equal((await db.run(quotaOps.quotaBases(acme, 'global', 7000))).size, 0, 'another scope');

  await db.run(ops.patchClientLimits(acme, 'bob', { downloaded_bytes: 5, reset_period: 'week' }));
  assert.deepEqual(await db.run(ops.periodicClientOverrides()), [{ customer_id: acme, client_id: 'bob', values: { downloaded_bytes: 5, reset_period: 'week' } }]);
});
