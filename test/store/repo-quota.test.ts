// The periodic-caps repository on both databases: quota bases recorded per scope (the
// customer, each client, each live session) from the stored lifetime totals; a fixed period
// keeps its first base, a rolling window rewrites it as the totals minus the usage history since
// the window's start; old periods are pruned (the rolling key stays); and the limits records
// whose caps renew are the quota job's work list.
import assert from 'node:assert/strict';
import { quotaOps as ops } from '../../server/store/repos/quota.ts';
import { usageOps } from '../../server/store/repos/usage.ts';
import { limitOps } from '../../server/store/repos/limits.ts';
import { eachDialect } from '../helpers/dialects.ts';
import { addCustomer, addSession } from '../helpers/store-rows.ts';

const DAY = 86_400_000;
const P1 = Date.UTC(2026, 10, 1);
const P2 = Date.UTC(2026, 10, 2);

eachDialect('quota: bases per scope, kept for a fixed period, rewritten for a rolling window, pruned', async (db) => {
  const acme = await addCustomer(db, 'acme');
  const globex = await addCustomer(db, 'globex');
  const a1 = await addSession(db, acme, 'alice', { up: 100, down: 1000 });
  const a2 = await addSession(db, acme, 'alice', { up: 10, down: 20 });
  const b1 = await addSession(db, acme, 'bob', { up: 5, down: 6, status: 'ended' });
  await addSession(db, globex, 'alice', { up: 7, down: 7 });
  const base = (scope: 'global' | 'client' | 'session', entity: string, period: number) => db.run(ops.quotaBase(acme, scope, entity, period));

  assert.equal(await base('global', acme, P1), undefined);
  // fixed periods: one row per entity; ended sessions count in the totals but get no base of their own
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'global', P1)), 1);
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'client', P1)), 2);
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'session', P1)), 2);
  assert.deepEqual(await base('global', acme, P1), { up: 115, down: 1026 });
  assert.deepEqual(await base('client', 'alice', P1), { up: 110, down: 1020 });
  assert.deepEqual(await base('client', 'bob', P1), { up: 5, down: 6 });
  assert.deepEqual(await base('session', a1, P1), { up: 100, down: 1000 });
  assert.deepEqual(await base('session', a2, P1), { up: 10, down: 20 });
  assert.equal(await base('session', b1, P1), undefined);
  assert.equal(await db.run(ops.quotaBase(globex, 'global', globex, P1)), undefined, 'only the customer asked for');

  // the period's first base stays however the totals move; the next period starts from them
  await db.sql('UPDATE sessions SET uploaded_bytes = uploaded_bytes + 50 WHERE id = ?', a1);
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'global', P1)), 0);
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'session', P1)), 0);
  assert.deepEqual(await base('global', acme, P1), { up: 115, down: 1026 });
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'global', P2)), 1);
  assert.deepEqual(await base('global', acme, P2), { up: 165, down: 1026 });

  // rolling window (key 0): the totals minus the history since the window's start, rewritten each time
  const since = P2 - 30 * DAY;
  await db.run(
    usageOps.addUsage([
      { session_id: a1, node: 'local', start: since + DAY, uploaded_bytes: 40, downloaded_bytes: 400 },
      { session_id: a2, node: 'local', start: since + DAY, uploaded_bytes: 3, downloaded_bytes: 4 },
      { session_id: a1, node: 'local', start: since - DAY, uploaded_bytes: 1, downloaded_bytes: 1 }, // before the window
    ]),
  );
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'global', 0, since)), 1);
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'client', 0, since)), 2);
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'session', 0, since)), 2);
  assert.deepEqual(await base('global', acme, 0), { up: 165 - 43, down: 1026 - 404 });
  assert.deepEqual(await base('client', 'alice', 0), { up: 160 - 43, down: 1020 - 404 });
  assert.deepEqual(await base('client', 'bob', 0), { up: 5, down: 6 });
  assert.deepEqual(await base('session', a1, 0), { up: 150 - 40, down: 1000 - 400 });
  assert.deepEqual(await base('session', a2, 0), { up: 10 - 3, down: 20 - 4 });
  // the window moves on past that traffic: the bases are rewritten
  assert.equal(await db.run(ops.snapshotQuotaBases(acme, 'session', 0, since + 2 * DAY)), 2);
  assert.deepEqual(await base('session', a1, 0), { up: 150, down: 1000 });

  // prune: periods that started before the cutoff; the rolling key 0 is never pruned
  assert.equal(await db.run(ops.pruneQuotaBases(P1)), 0);
  assert.equal(await db.run(ops.pruneQuotaBases(P2)), 5);
  assert.equal(await base('global', acme, P1), undefined);
  assert.deepEqual(await base('global', acme, P2), { up: 165, down: 1026 });
  assert.deepEqual(await base('global', acme, 0), { up: 122, down: 622 });
  assert.equal(await db.run(ops.pruneQuotaBases(P2 + 1)), 1);
  const left = await db.sql<{ n: number }>('SELECT COUNT(*) AS n FROM quota_bases WHERE period_start = 0');
  assert.equal(Number(left[0]!.n), 5);
});

eachDialect('quota: the limits records whose caps renew', async (db) => {
  const acme = await addCustomer(db, 'acme');
  const globex = await addCustomer(db, 'globex');
  const put = (customer: string, scope: string, fields: object) =>
    db.sql('INSERT INTO limits (customer_id, scope, id, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', customer, scope, `${customer}-${scope}`, JSON.stringify(fields), 'x', 'x');
  assert.deepEqual(await db.run(limitOps.periodicLimits()), []);
  await put(acme, 'global', { downloaded_bytes: 1000, reset_period: 'month', reset_anchor: '2026-01-01T00:00:00.000Z' });
  await put(acme, 'client', { downloaded_bytes: 10, reset_period: 'none' });
  await put(acme, 'session', { max_sessions: 3 });
  await put(globex, 'session', { uploaded_bytes: 5, reset_period: 'rolling_30d' });
  const got = (await db.run(limitOps.periodicLimits())).sort((x, y) => x.scope.localeCompare(y.scope));
  assert.deepEqual(got, [
    { customer_id: acme, scope: 'global', values: { downloaded_bytes: 1000, reset_period: 'month', reset_anchor: '2026-01-01T00:00:00.000Z' } },
    { customer_id: globex, scope: 'session', values: { uploaded_bytes: 5, reset_period: 'rolling_30d' } },
  ]);
});
