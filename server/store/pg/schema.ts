// Applies the migrations of both databases' one list (../migrations/index.ts) to PostgreSQL. Tables
// match SQLite's column for column (test/store/schema-parity.test.ts), so one set of operations serves
// both; the service's times are ISO-8601 text, but node contact times use the database's own clock
// (timestamptz) so every instance judges "up within 10 s" alike.
import type pg from 'pg';
import { MIGRATIONS, migrationSql, pendingVersions } from '../migrations/index.ts';
import { inTransaction } from './pool.ts';

export { MIGRATIONS };

/** An arbitrary constant naming "the schema migration" among advisory locks. */
export const MIGRATION_LOCK_KEY = 0x7661645f6d6967n; // "vad_mig"

/**
 * Brings the schema up to date and returns its version. Several `serve` processes may start at once on
 * an empty database: a transaction-scoped advisory lock serialises them and the version is read under
 * it, so one applies the pending versions and the rest find nothing to do. All are applied in one
 * transaction (DDL is transactional in PostgreSQL): a crash mid-way leaves the previous version intact.
 * `upTo` stops at an older version (upgrade tests).
 */
export function migrate(pool: pg.Pool, upTo = MIGRATIONS.length): Promise<number> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version INTEGER PRIMARY KEY,
         applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
       )`,
    );
    const { rows } = await client.query<{ v: number }>('SELECT COALESCE(MAX(version), 0)::int AS v FROM schema_migrations');
    for (const v of pendingVersions(rows[0].v, upTo)) {
      await client.query(migrationSql(v, 'postgres'));
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v]);
    }
    return Math.max(rows[0].v, Math.min(upTo, MIGRATIONS.length));
  });
}
