// The store on PostgreSQL: every operation of ../ops.ts run over a pool (../sql/pg-runner.ts), plus
// what only a shared database has: migrations under an advisory lock, caller-held transactions, and the
// token version every instance watches. Change notices (pg_notify, delivered on commit in commit order)
// wake other instances: `vad_events` (customer_id:id), `vad_sessions` (pause flag changed: session id),
// `vad_limits` (customer_id:scope), `vad_grants` (a released grant: customer_id), `vad_tokens`,
// `vad_nodes`, `vad_reads` (a cached table was written: read-cache.ts, live once `reads.follow(listener)`
// is called).
import type pg from 'pg';
import type { AsyncOps } from '../sql/op.ts';
import { bindAsync, PgRunner } from '../sql/pg-runner.ts';
import { STORE_OPS, type StoreOps } from '../ops.ts';
import { inTransaction, openPool, type PoolOptions } from './pool.ts';
import { PgReadCache } from './read-cache.ts';
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
  /** The cache of getCached reads, shared with transaction()'s stores; bypassed until it follows a listener. */
  readonly reads: PgReadCache;

  /** With `client`, every operation joins the transaction the caller holds on it (transaction()). */
  constructor(pool: pg.Pool, client?: pg.PoolClient, reads = new PgReadCache()) {
    this.pool = pool;
    this.reads = reads;
    this.runner = new PgRunner(pool, () => this.tokenGeneration++, client ?? null, reads);
    Object.assign(this, bindAsync(STORE_OPS, this.runner));
  }

  /** Opens a pool and migrates the schema (the pool is ended if that fails). */
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

  /** Runs `fn` in one transaction via a store that joins it (only for work interleaving other awaits). */
  async transaction<T>(fn: (tx: PgStore) => Promise<T>): Promise<T> {
    let tx: PgStore | undefined;
    try {
      const out = await inTransaction(this.pool, (client) => fn((tx = new PgStore(this.pool, client, this.reads))));
      this.tokenGeneration += tx!.tokenGeneration;
      return out;
    } finally {
      // Even a failed COMMIT may have committed: the cached reads of what it wrote go either way.
      tx?.runner.committed();
    }
  }
}
