// The async store seam: what the control plane's services (sessions, routes, auth, events)
// talk to, whichever database is behind it. Every operation returns a Promise. PostgreSQL's
// PgStore implements it directly; the SQLite Store gets the thin adapter below, whose methods
// call the synchronous statement and hand back an already-settled promise (no thread hop, no
// extra query: the hot paths stay one prepared statement each).
//
// The data plane does NOT use this seam: DataPlaneDeps.store stays synchronous (the relay's
// admission and counting cannot wait on a network round trip). On SQLite it is the Store
// itself; on PostgreSQL it is the LocalView (server/cluster/local-view.ts).
// Type-only: the SQLite mode never loads the PostgreSQL client.
import type { AsyncStoreApi, PgStore, SharedStoreOps } from './pg/store.ts';
import type { Store } from './store.ts';

/** The control plane's store: the shared operations, Promise-returning, and close(). */
export type ControlStore = AsyncStoreApi & {
  /** 'sqlite' or 'postgres': for what differs in kind (the data plane's view, the CLI's messages). */
  readonly kind: 'sqlite' | 'postgres';
  close(): Promise<void>;
};

/** Every operation the adapter forwards (kept in step with SharedStoreOps by the type below). */
const OPS = [
  'countCustomers',
  'ensureCustomer',
  'createToken',
  'findToken',
  'listTokens',
  'revokeToken',
  'insertSession',
  'getSession',
  'getSessionOf',
  'listSessions',
  'setPaused',
  'saveRuntime',
  'sumCounters',
  'getLimitsRecord',
  'getLimits',
  'patchLimits',
  'deleteLimits',
  'insertEvent',
  'eventsAfter',
  'idBeforeNewest',
  'pruneEvents',
  'pruneEventsBatch',
  'addNode',
  'getNode',
  'getNodeByName',
  'findNodeByToken',
  'listNodes',
  'upNodes',
  'activeNodeZones',
  'touchNode',
  'removeNode',
  'placeSession',
  'placementOf',
  'placedNodes',
  'sessionsOnNode',
  'applyNodeReport',
  'nodeReportSeq',
  'grantBytes',
  'releaseGrant',
  'setNodeListeners',
  'relayNodes',
  'activeSessionNodes',
  'claimSession',
  // crash repair
  'nodeHello',
  'repairRestartedNode',
  'repairSilentNodes',
  'sessionsMovedFrom',
  // usage history
  'addUsage',
  'usageBuckets',
  'usageTopClients',
  'rollupUsage',
  'pruneUsage',
  'usageRowCounts',
  // audit trail
  'recordAudit',
  'auditEntries',
  'pruneAuditBatch',
  // session expiry
  'expireIdleSessions',
  // periodic caps
  'quotaBase',
  'snapshotQuotaBases',
  'pruneQuotaBases',
  'periodicLimits',
] as const satisfies readonly SharedStoreOps[];
// Compile-time: OPS names every shared operation (a new one added to SharedStoreOps fails here).
type Missing = Exclude<SharedStoreOps, (typeof OPS)[number]>;
const _allOps: Missing extends never ? true : Missing = true;
void _allOps;

/** The SQLite Store behind the async seam. Errors thrown by a statement become rejections. */
export function sqliteControlStore(store: Store): ControlStore {
  const api: Record<string, unknown> = {
    kind: 'sqlite',
    dataVersion: () => Promise.resolve(store.dataVersion()),
    close: () => {
      store.db.close();
      return Promise.resolve();
    },
  };
  for (const op of OPS) {
    const fn = (store[op] as (...a: unknown[]) => unknown).bind(store);
    api[op] = (...args: unknown[]) => {
      try {
        return Promise.resolve(fn(...args));
      } catch (err) {
        return Promise.reject(err);
      }
    };
  }
  Object.defineProperty(api, 'tokenGeneration', { get: () => store.tokenGeneration, enumerable: true });
  return api as unknown as ControlStore;
}

/** PgStore is a ControlStore as it is; this only adds the kind. */
export function pgControlStore(store: PgStore): ControlStore & PgStore {
  return Object.assign(store, { kind: 'postgres' as const });
}
