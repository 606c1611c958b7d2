// The embedded SQLite backend (the default, one process per data folder): the synchronous Store
// behind the async seam, the in-process event bus, and the data folder's lock with the repair of
// what a crash left behind, taken before anything can read the store.
import type { Logger } from '../domain.ts';
import { EventBus } from '../events/bus.ts';
import type { Metrics } from '../metrics.ts';
import { timedSettled } from '../metrics.ts';
import { TokenCache } from '../plugins/auth.ts';
import { sqliteControlStore } from '../store/control.ts';
import { DB_FILE, openDatabase } from '../store/db.ts';
import { takeDataDir } from '../store/recovery.ts';
import { Store } from '../store/store.ts';
import { STORE_OPS } from '../store/ops.ts';
import { subscriptionOps } from '../store/repos/subscriptions.ts';
import { webhookOps } from '../store/repos/webhooks.ts';
import { bindSettled } from '../store/sql/sqlite-runner.ts';
import { startCheckpointer } from './checkpointer.ts';
import { join } from 'node:path';
import type { Backend } from './types.ts';

export function openSqlite(dataDir: string, metrics: Metrics, log: Logger): Backend {
  const store = new Store(openDatabase(dataDir));
  const bus = new EventBus(store, log);
  // One server per folder; on PostgreSQL other instances share the database instead, and one
  // starting must not close the sessions they carry. When the folder is in use (or the repair
  // fails), takeDataDir closes the database itself and throws its own error.
  const releaseDataDir = takeDataDir(dataDir, store, log);
  // WAL checkpoints in a worker thread, not in the commit of a request (checkpointer.ts).
  const stopCheckpoints = startCheckpointer(store.db, join(dataDir, DB_FILE), log);
  return {
    database: 'sqlite',
    // Each operation timed around its synchronous run.
    data: Object.assign(sqliteControlStore(store), timedSettled(store as unknown as Record<string, unknown>, Object.keys(STORE_OPS), metrics)),
    events: {
      eventsAfter: (customerId, afterId, filter, limit) => store.eventsAfter(customerId, afterId, filter, limit),
      subscribe: (sub) => bus.subscribe(sub),
      fromLog: false,
    },
    publish: (e) => Promise.resolve(bus.publish(e)),
    announce: (stored) => {
      for (const s of stored) bus.fanOut(s.customerId, s.event);
    },
    tokenLookup: new TokenCache(store),
    revocations: store,
    sqlite: { store, bus },
    dataPlaneStore: store,
    publishLocal: (e) => bus.publishOrKeep(e),
    attach: () => {},
    webhookStore: () => bindSettled(webhookOps, store.runner),
    subscriptionData: () => bindSettled(subscriptionOps, store.runner),
    clusterKey: null,
    drain: async () => {},
    close: async () => {
      bus.close();
      await stopCheckpoints();
      store.db.close();
      releaseDataDir();
    },
  };
}
