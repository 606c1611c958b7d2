// The store on PostgreSQL: every operation of the one store (../ops.ts), run over a pool
// (../sql/pg-runner.ts), plus what only a shared database has: opening with migrations under an
// advisory lock, caller-held transactions, and the token version every instance watches.
// Change notices (pg_notify, delivered on commit in commit order) wake the other instances:
// `vad_events` (customer_id:id), `vad_sessions` (a session's pause flag changed: its id),
// `vad_limits` (customer_id:scope), `vad_tokens`, `vad_nodes`.
import type pg from 'pg';
import type { AsyncOps } from '../sql/op.ts';
import { bindAsync, PgRunner } from '../sql/pg-runner.ts';
import { STORE_OPS, type StoreOps } from '../ops.ts';
import { inTransaction, openPool, type PoolOptions } from './pool.ts';
import { migrate } from './schema.ts';

export { CHANNELS } from '../sql/channels.ts';
export * from '../types.ts';

// Declaration merging: the class has every operation of STORE_OPS, bound in the constructor.
export interface PgStore extends AsyncOps<StoreOps> {}

export class PgStore {
  /** The async seam's database kind (control.ts): PgStore is a ControlStore as it is. */
  readonly kind = 'postgres' as const;
  readonly pool: pg.Pool;
  readonly runner: PgRunner;
  /** Bumped whenever this PgStore creates or revokes a token (as in the SQLite Store). */
  tokenGeneration = 0;

  /** With `client`, every operation joins the transaction the caller holds on it (transaction()). */
  constructor(pool: pg.Pool, client?: pg.PoolClient) {
    this.pool = pool;
    this.runner = new PgRunner(pool, () => this.tokenGeneration++, client ?? null);
    Object.assign(this, bindAsync(STORE_OPS, this.runner));
  }

  /** Opens a pool on `url`, brings the schema up to date, and returns the store. */
  static async open(url: string, opts: PoolOptions = {}): Promise<PgStore> {
    const pool = openPool(url, opts);
    await migrate(pool).catch(async (err: unknown) => {
      await pool.end().catch(() => {});
      throw err;
    });
    return new PgStore(pool);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /**
   * Runs `fn` in one transaction on one connection, with a store whose operations join it (for
   * work that must interleave other awaits; an operation's own transaction needs none of this).
   */
  async transaction<T>(fn: (tx: PgStore) => Promise<T>): Promise<T> {
    let tx!: PgStore;
    const out = await inTransaction(this.pool, (client) => fn((tx = new PgStore(this.pool, client))));
    this.tokenGeneration += tx.tokenGeneration;
    return out;
  }
}
