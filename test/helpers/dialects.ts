// Runs a storage test on both databases: a real SQLite file (synchronous runner behind
// settled promises, as the control plane sees it) and a real throwaway PostgreSQL server. A
// repository test written once with `eachDialect` proves an operation and its rule on both.
import { after, before, test, type TestContext } from 'node:test';
import { join } from 'node:path';
import { openDatabase } from '../../server/store/db.ts';
import { openPool } from '../../server/store/pg/pool.ts';
import { migrate } from '../../server/store/pg/schema.ts';
import type { Dialect, Op } from '../../server/store/sql/op.ts';
import { PgRunner } from '../../server/store/sql/pg-runner.ts';
import { SqliteRunner } from '../../server/store/sql/sqlite-runner.ts';
import { startPostgres, type PgServer } from './postgres.ts';
import { removeDir, tempDir } from './server.ts';

/** One database: `run` executes an operation and resolves its result. */
export interface DialectDb {
  dialect: Dialect;
  run<T>(op: Op<T>): Promise<T>;
  /** A raw statement (`?` placeholders on both), for arranging or checking rows. */
  sql<T = Record<string, unknown>>(text: string, ...params: (string | number | boolean | null)[]): Promise<T[]>;
}

let server: PgServer | undefined;
let dbCount = 0;

/**
 * Registers `name` as two tests, one per dialect, each on a fresh database. The PostgreSQL
 * server is started once per test file and removed after it.
 */
export function eachDialect(name: string, fn: (db: DialectDb, t: TestContext) => Promise<void>): void {
  if (dbCount === 0) {
    before(async () => {
      server = await startPostgres();
    });
    after(async () => {
      await server?.destroy();
    });
  }
  dbCount++;
  test(`${name} (SQLite)`, async (t) => {
    const dir = tempDir('vad-dialect-');
    const db = openDatabase(join(dir, 'data'));
    t.after(() => {
      db.close();
      removeDir(dir);
    });
    const runner = new SqliteRunner(db);
    await fn(
      {
        dialect: 'sqlite',
        run: async (op) => runner.run(op),
        sql: async (text, ...params) => runner.all(text, ...params) as never,
      },
      t,
    );
  });
  test(`${name} (PostgreSQL)`, async (t) => {
    const url = await server!.createDatabase(`d${dbCount}_${Math.random().toString(36).slice(2, 8)}`);
    const pool = openPool(url, { max: 4 });
    await migrate(pool);
    t.after(() => pool.end());
    const runner = new PgRunner(pool);
    await fn(
      {
        dialect: 'postgres',
        run: (op) => runner.run(op),
        sql: async (text, ...params) => {
          let i = 0;
          return (await pool.query(text.replace(/\?/g, () => `$${++i}`), params)).rows as never;
        },
      },
      t,
    );
  });
}
