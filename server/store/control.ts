// The async store seam: what the control plane's services (sessions, routes, auth, events) talk
// to, whichever database is behind it: the one store's operations (ops.ts), each returning a
// Promise. PostgreSQL's PgStore is one as it is; on SQLite the same operations run
// synchronously and hand back an already-settled promise (no thread hop, no extra query).
//
// The data plane does NOT use this seam: DataPlaneDeps.store stays synchronous (the relay's
// admission and counting cannot wait on a network round trip). On SQLite it is the Store
// itself; on PostgreSQL it is the LocalView (server/cluster/local-view.ts).
import type { AsyncOps } from './sql/op.ts';
import { bindSettled } from './sql/sqlite-runner.ts';
import { STORE_OPS, type StoreOps } from './ops.ts';
import type { Store } from './store.ts';

/** The control plane's store: every operation, Promise-returning, and close(). */
export type ControlStore = AsyncOps<StoreOps> & {
  /** 'sqlite' or 'postgres': for what differs in kind (the data plane's view, the CLI's messages). */
  readonly kind: 'sqlite' | 'postgres';
  readonly tokenGeneration: number;
  close(): Promise<void>;
};

/** The SQLite Store behind the async seam. Errors thrown by a statement become rejections. */
export function sqliteControlStore(store: Store): ControlStore {
  return {
    ...bindSettled(STORE_OPS, store.runner),
    kind: 'sqlite',
    close: () => Promise.resolve(store.db.close()),
    get tokenGeneration() {
      return store.tokenGeneration;
    },
  };
}
