// The async store seam of the control plane's services (sessions, routes, auth, events), whatever the
// database: the operations of ops.ts, each returning a Promise. PgStore is one as it is; on SQLite they
// run synchronously and return settled promises (no thread hop, no extra query).
// The data plane does NOT use it: DataPlaneDeps.store stays synchronous (relay admission and counting
// cannot wait on a network round trip): the Store on SQLite, on PostgreSQL the LocalView
// (server/cluster/local-view.ts).
import type { AsyncOps } from './sql/op.ts';
import { bindSettled } from './sql/sqlite-runner.ts';
import { STORE_OPS, type StoreOps } from './ops.ts';
import type { Store } from './store.ts';

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
