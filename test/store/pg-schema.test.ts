// Migrations of the PostgreSQL control plane: several processes starting at once on an empty
// database end with one schema, each version applied exactly once; a later start is a no-op;
// a database newer than the program is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { openPool } from '../../server/store/pg/pool.ts';
import { migrate, MIGRATIONS } from '../../server/store/pg/schema.ts';
import { PgStore } from '../../server/store/pg/store.ts';
import { startPostgres } from '../helpers/postgres.ts';

test('migrations: 8 concurrent starters on an empty database, then a restart, then a newer schema', async (t) => {
  const server = await startPostgres(t);
  const url = await server.createDatabase('migrate_race');

  // Separate pools, as separate `serve` processes would have; all released at the same moment.
  const starters = 8;
  const results = await Promise.allSettled(Array.from({ length: starters }, () => PgStore.open(url, { max: 2 })));
  const stores = results.map((r) => {
    assert.equal(r.status, 'fulfilled', r.status === 'rejected' ? String(r.reason) : '');
    return (r as PromiseFulfilledResult<PgStore>).value;
  });
  server.onDestroy(() => Promise.all(stores.map((s) => s.close())));

  const c = new pg.Client({ connectionString: url });
  await c.connect();
  server.onDestroy(() => c.end());
  const versions = (await c.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version);
  assert.deepEqual(versions, MIGRATIONS.map((_, i) => i + 1));
  const counters = (await c.query('SELECT count(*)::int AS n FROM event_counter')).rows[0].n;
  assert.equal(counters, 1, 'the one-off rows of a migration were inserted once');

  // Every starter works on the same schema right away.
  await Promise.all(stores.map((s, i) => s.createToken(`cust-${i % 3}`, 'owner')));
  assert.equal(await stores[0].countCustomers(), 3);

  // A later start finds nothing to do.
  const pool = openPool(url);
  server.onDestroy(() => pool.end());
  assert.equal(await migrate(pool), MIGRATIONS.length);
  assert.equal((await c.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0].n, MIGRATIONS.length);

  // A database migrated by a newer program is refused, not half-used.
  await c.query('INSERT INTO schema_migrations (version) VALUES ($1)', [MIGRATIONS.length + 1]);
  await assert.rejects(migrate(pool), /newer than this program/);
  await assert.rejects(PgStore.open(url), /newer than this program/);
});
