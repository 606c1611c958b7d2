// The store on SQLite: the operations of ops.ts run synchronously (sql/sqlite-runner.ts), each one
// statement or transaction committed before it returns (an acknowledged write survives a crash). The
// data plane calls it directly (no thread hop, one prepared statement a call); the control plane via
// the async seam (control.ts).
import type { DatabaseSync } from 'node:sqlite';
import type { SyncOps } from './sql/op.ts';
import { bindSync, SqliteRunner } from './sql/sqlite-runner.ts';
import { STORE_OPS, type StoreOps } from './ops.ts';
import { transaction } from './db.ts';

export * from './types.ts';

// Declaration merging: the class has every operation of STORE_OPS, bound in the constructor.
export interface Store extends SyncOps<StoreOps> {}

export class Store {
  readonly db: DatabaseSync;
  readonly runner: SqliteRunner;
  /** Bumped whenever this Store creates or revokes a token (token look-up caches watch it). */
  tokenGeneration = 0;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.runner = new SqliteRunner(db, () => this.tokenGeneration++);
    Object.assign(this, bindSync(STORE_OPS, this.runner));
  }

  /** Runs `fn` in one transaction (operations inside join it). */
  transaction<T>(fn: () => T): T {
    return transaction(this.db, fn);
  }
}
