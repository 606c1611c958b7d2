// The PostgreSQL backend of a `serve` process on the cluster's control plane (`--database URL`).
// Several processes may share one database and any of them answers any request:
//   - data: PgStore behind the async seam (every write committed before it is acknowledged);
//   - events: PgEventFeed, every event of the customer from whichever instance, once, in id order;
//   - tokenLookup: PgTokenCache, dropped on every instance by the vad_tokens notification;
//   - the local data plane reads the LocalView (cluster/local-view.ts): sessions loaded before
//     admission, pause and limit changes pushed by vad_sessions / vad_limits, counters added;
//   - getCached reads: PgReadCache (store/pg/read-cache.ts), dropped by vad_reads, bypassed
//     while the LISTEN connection is down;
//   - one LISTEN connection (PgListener) carries the notifications to all of these, and to the
//     instance's change feed (a pause, limits change or node removal on any instance).
// Loaded only when `database` is given, so the SQLite mode never loads the PostgreSQL client.
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CounterJournal } from '../cluster/journal.ts';
import { LocalView } from '../cluster/local-view.ts';
import type { EventInput, Logger } from '../domain.ts';
import type { ChangeFeed } from '../events/changes.ts';
import { PgEventFeed } from '../events/pg-feed.ts';
import { type Metrics, timedStore } from '../metrics.ts';
import { PgListener } from '../store/pg/listener.ts';
import { ownBackends } from '../store/pg/pool.ts';
import { CHANNELS, PgStore } from '../store/pg/store.ts';
import { PgTokenCache } from '../plugins/pg-token-cache.ts';
import { clusterKeyOps } from '../store/repos/cluster-keys.ts';
import { subscriptionOps } from '../store/repos/subscriptions.ts';
import { webhookOps } from '../store/repos/webhooks.ts';
import { bindAsync, PgRunner } from '../store/sql/pg-runner.ts';
import type { Backend } from './types.ts';

/** How long a start waits for the LISTEN connection before serving anyway (it keeps retrying). */
const LISTEN_WAIT_MS = 5_000;

export interface PostgresOptions {
  url: string;
  dataDir: string;
  metrics: Metrics;
  log: Logger;
  changes: ChangeFeed;
  /** Answer the cached reads from memory (pg/read-cache.ts); off: every read asks the database. */
  readCache?: boolean;
}

/** The LISTEN connection; its heartbeat serves the read cache (a silently cut connection must stop it answering). */
function openListener(url: string, log: Logger, readCache: boolean): PgListener {
  return new PgListener(url, Object.values(CHANNELS), {
    applicationName: 'vpn-access listen',
    heartbeatMs: readCache ? undefined : 0,
    onError: (err) => log.warn({ err: err.message }, 'database notifications interrupted; reconnecting'),
  });
}

/**
 * The read cache, live while the listener is up (pg/read-cache.ts). With --read-cache off it
 * never follows one, so it is never live and every read goes to the database. Returns the stop.
 */
function startReadCache(pg: PgStore, listener: PgListener, metrics: Metrics, on: boolean): () => void {
  metrics.readCacheHits(() => pg.reads.cache.hits);
  return on ? pg.reads.follow(listener) : () => {};
}

/** The channels whose notices wake the node channels (others: tokens, events, reads). */
const WAKING: ReadonlySet<string> = new Set([CHANNELS.sessions, CHANNELS.limits, CHANNELS.grants, CHANNELS.nodes]);

export async function openPostgres({ url, dataDir, metrics, log, changes, readCache = true }: PostgresOptions): Promise<Backend> {
  // Migrations run here, under an advisory lock: several instances may start at once.
  const pg = await PgStore.open(url, {
    applicationName: 'vpn-access serve',
    onIdleError: (err) => log.warn({ err: err.message }, 'database connection lost'),
  });
  const data = timedStore(pg, metrics);
  const runner = new PgRunner(pg.pool, undefined, null, pg.reads);
  const listener = openListener(url, log, readCache);
  let waited: NodeJS.Timeout | undefined;
  await Promise.race([listener.ready, new Promise<void>((resolve) => (waited = setTimeout(resolve, LISTEN_WAIT_MS)))]);
  clearTimeout(waited);
  const stopReads = startReadCache(pg, listener, metrics, readCache);

  const feed = new PgEventFeed(data, listener, { onError: (err) => log.warn({ err: String(err) }, 'reading events failed; retrying') });
  const tokenLookup = new PgTokenCache(data, listener);
  // The data plane's counters and events go to this instance's journal first, then into the
  // database in order, each report once (a kill -9 or an outage loses none of them).
  const journal = CounterJournal.open(join(dataDir, 'counter-journal.log'), log);
  const view = new LocalView(data, listener, log, journal);

  // Open event streams of a token revoked on any instance are closed: the registry's watch
  // (written for SQLite's data_version) reads a version bumped here once the revoked ids have
  // been re-read after a vad_tokens notification (or a reconnection of the LISTEN connection).
  const revoked = new Set<string>();
  let revokedVersion = 0;
  const rereadRevoked = async () => {
    try {
      const rows = await data.listTokens();
      revoked.clear();
      for (const t of rows) if (t.revoked_at) revoked.add(t.id);
      revokedVersion++;
    } catch (err) {
      log.warn({ err: String(err) }, 'reading revoked tokens failed');
    }
  };
  const own = ownBackends(pg.pool);
  listener.onNotification((channel, _payload, processId) => {
    if (channel === CHANNELS.tokens) void rereadRevoked();
    // A pause, limits change, released grant or node removal on any instance: the node channels
    // connected to this one re-send their state at once (server/cluster/node-channel.ts). This
    // instance's own writes of them woke its channels as they were answered (the services emit),
    // so their notices, which come back here too, wake nothing a second time.
    if (WAKING.has(channel) && !own.has(processId)) changes.emit();
  });
  listener.onReconnect(() => void rereadRevoked());

  return {
    database: 'postgres',
    data,
    events: {
      eventsAfter: (customerId, afterId, filter, limit) => data.eventsAfter(customerId, afterId, filter, limit),
      subscribe: (sub) => feed.subscribe(sub),
      fromLog: true,
    },
    publish: (e) => feed.publish(e),
    // Stored in a transaction whose NOTIFY (delivered at the commit) wakes every instance's feed.
    announce: () => {},
    tokenLookup,
    revocations: { tokenGeneration: 0, dataVersion: () => revokedVersion, isTokenActive: (id: string) => !revoked.has(id) },
    sqlite: null,
    dataPlaneStore: view,
    publishLocal: (e: EventInput) => view.publish(e),
    attach: (dataPlane) => view.attach(dataPlane),
    onCountersApplied: (fn) => (view.onApplied = fn),
    webhookStore: () => bindAsync(webhookOps, runner),
    subscriptionData: () => bindAsync(subscriptionOps, runner),
    clusterKey: bindAsync(clusterKeyOps, runner).clusterKey,
    // Support reads ask the other instances by this id: the host and its journal's (kept across restarts).
    instances: { instanceId: `${hostname()}-${journal.id.slice(0, 8)}`, onNotification: (fn) => listener.onNotification(fn) },
    drain: () => view.close(),
    close: async () => {
      await feed.close();
      tokenLookup.close();
      stopReads();
      await listener.close();
      await data.close();
    },
  };
}
