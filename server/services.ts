// The service objects shared by the routes, built once per server by createServices, on either
// database: the embedded SQLite store (the default) or, with `database`, PostgreSQL (the
// cluster's control plane, several `serve` processes on one database). What differs between the
// two is the Backend (backend/sqlite.ts, backend/postgres.ts); everything else is composed here,
// once. The routes and the use cases only see the async store seam (`data`, store/control.ts),
// the event source (`events`) and the instance's change feed (`changes`).
import { InstanceAsk } from './cluster/instance-ask.ts';
import { NodeInspect } from './cluster/node-inspect.ts';
import { SupportService, type SupportDeps } from './support.ts';
import type { SessionEvent } from './contract/schemas.ts';
import type { DataPlane, DataPlaneDeps } from './dataplane/api.ts';
import { createDataPlane } from './dataplane/index.ts';
import { ServeGeoRoutes } from './cluster/geo.ts';
import type { EventInput, Logger } from './domain.ts';
import { ChangeFeed } from './events/changes.ts';
import type { EventLogSource } from './events/sse.ts';
import { StreamRegistry } from './events/streams.ts';
import type { ResolvedConfig, ServerOptions, Settings } from './http/config.ts';
import { silentLogger } from './log.ts';
import type { TokenLookup } from './plugins/auth.ts';
import { SessionService } from './sessions.ts';
import type { TlsCertificates } from './tls/index.ts';
import type { ControlStore } from './store/control.ts';
import { ZoneCatalogue } from './zones/catalogue.ts';
import { ZonePlacement } from './cluster/placement.ts';
import { LOCAL_NODE, UsageHistory } from './usage/history.ts';
import { Metrics } from './metrics.ts';
import { AuditTrail } from './audit/trail.ts';
import type { WebhookService } from './webhooks/service.ts';
import { createWebhooks } from './webhooks/index.ts';
import type { SubscriptionService } from './subscriptions/service.ts';
import { createSubscriptions } from './subscriptions/index.ts';
import type { Backend, SqliteHandles } from './backend/types.ts';
import { DisposableStore } from '../common/disposable-store.ts';
import { openSqlite } from './backend/sqlite.ts';
import { LimitsService } from './limits.ts';
import { PauseService } from './pause.ts';
import { ClientsService } from './clients/service.ts';
import { wallClock } from './time.ts';
import { ThresholdWatch } from './quota/thresholds.ts';

/** Settings live with the rest of the resolved configuration; re-exported for the routes' callers. */
export type { Settings } from './http/config.ts';

export interface Services {
  /** Which database the control plane runs on. */
  database: 'sqlite' | 'postgres';
  /** The async store seam: what the use cases and the routes use, on either database. */
  data: ControlStore;
  /** The event log as the event stream reads it (replay, then live). */
  events: EventLogSource;
  /** Persists an event and wakes its readers (the data plane's events go through here). */
  publish(e: EventInput): Promise<SessionEvent>;
  /** Wakes the readers of events already stored (a node report's, stored with its counters). */
  announce(stored: Array<{ customerId: string; event: SessionEvent }>): void;
  /** This instance's change fan-out: pauses, limits changes, repaired or removed nodes wake the node channels. */
  changes: ChangeFeed;
  /** The API's token look-ups (cached). */
  tokenLookup: TokenLookup;
  /** The embedded database's synchronous store and in-process bus; null on PostgreSQL. */
  sqlite: SqliteHandles | null;
  zones: ZoneCatalogue;
  placement: ZonePlacement;
  sessions: SessionService;
  /** Limits use cases: read, update, delete (server/limits.ts). */
  limits: LimitsService;
  /** Pause and resume (server/pause.ts). */
  pause: PauseService;
  /** Clients as records (server/clients/service.ts): list, read, disable, expiry, limits override, usage reset, limitsInForce. */
  clients: ClientsService;
  dataPlane: DataPlane | null;
  /** The certificate of every listener; `reload()` re-reads given files (SIGHUP). */
  tls: TlsCertificates;
  log: Logger;
  settings: Settings;
  streams: StreamRegistry;
  /** Webhooks, null with `webhooks: false`: emitQuietly() queues an event kind outside the event
   *  log (pause, resume, limits changed, cap reached, expired). Started by buildServer. */
  webhooks: WebhookService | null;
  /** Subscription use cases and the /sub/<secret> feed. */
  subscriptions: SubscriptionService;
  /** What the server started, released by close() the last made first (the app adds its jobs to it). */
  owned: DisposableStore;
  /** Releases everything in `owned`: the jobs, the data plane, the store (and on PostgreSQL the listener and the event feed). */
  close(): Promise<void>;
  /** Usage thresholds (server/quota/thresholds.ts): touched where counters are written; started by buildServer. */
  thresholds: ThresholdWatch;
  /** Usage history writer; null with `usageHistory: false`. */
  usage: UsageHistory | null;
  /** This instance's Prometheus metrics (server/metrics.ts), served at GET /metrics. */
  metrics: Metrics;
  /** The audit trail (server/audit/trail.ts): who changed what, read at GET /v2/audit. */
  audit: AuditTrail;
  /** Where geo-targeted proxy requests leave, and the up nodes' relays (server/cluster/geo.ts). */
  geo: ServeGeoRoutes;
  /** Support's questions to the nodes connected to this instance (cluster/node-inspect.ts). */
  inspect: NodeInspect;
  /** A session's live connections and recent refusals, gathered on read (server/support.ts). */
  support: SupportService;
}

/** The backend the options ask for; PostgreSQL's client is loaded only in that mode. */
async function openBackend(opts: ServerOptions, metrics: Metrics, log: Logger, changes: ChangeFeed): Promise<Backend> {
  if (!opts.database) return openSqlite(opts.dataDir, metrics, log);
  const { openPostgres } = await import('./backend/postgres.ts');
  return openPostgres({ url: opts.database, dataDir: opts.dataDir, metrics, log, changes, readCache: opts.readCache });
}

/** Opens the store, loads the zones and builds the data plane (unless the options replace or
 *  disable it), the session service and the use cases on top of them. */
export async function createServices(opts: ServerOptions, config: ResolvedConfig, tls: TlsCertificates): Promise<Services> {
  const log = opts.logger ?? silentLogger;
  const metrics = new Metrics();
  const changes = new ChangeFeed();
  const backend = await openBackend(opts, metrics, log, changes);
  // Everything made from here on is released through one store, the last made first; a failure
  // while composing releases what was made so far.
  const owned = new DisposableStore();
  owned.add(() => metrics.close());
  owned.add(() => backend.close());
  try {
    return await compose(opts, config, tls, { log, metrics, changes, backend, owned });
  } catch (err) {
    await owned.dispose().catch(() => {});
    throw err;
  }
}

interface Made {
  log: Logger;
  metrics: Metrics;
  changes: ChangeFeed;
  backend: Backend;
  owned: DisposableStore;
}

async function compose(opts: ServerOptions, config: ResolvedConfig, tls: TlsCertificates, made: Made): Promise<Services> {
  const { log, metrics, changes, backend, owned } = made;
  const { data } = backend;
  const zones = ZoneCatalogue.load(opts.zonesFile);
  const placement = new ZonePlacement(zones, data);
  const usage = opts.usageHistory === false ? null : new UsageHistory(data, log, typeof opts.usageHistory === 'object' ? opts.usageHistory : {});
  if (usage) owned.add(() => usage.close());
  const audit = new AuditTrail(data, log);
  const webhooks = await createWebhooks(opts, { store: backend.webhookStore, clusterKey: backend.clusterKey, log, audit });
  const thresholds = thresholdWatch(opts, backend, webhooks, log);
  // Stopped after the data plane's last saves were written (a last pass checks them), before the store closes.
  owned.add(() => thresholds.stop());
  // What the data plane left to write is flushed after it closed, before the store closes.
  owned.add(() => backend.drain());
  const geo = new ServeGeoRoutes(data, () => zones.list());
  geo.start();
  const dataPlane = buildDataPlane({
    opts,
    config,
    log,
    store: backend.dataPlaneStore,
    publish: backend.publishLocal,
    zones,
    usage,
    metrics,
    saved: backend.onCountersApplied ? undefined : (id) => thresholds.touch(id),
    // A cut by a cap or an expiry becomes a webhook event (cap_reached, expired).
    onCapped: (customerId, sessionId, reason) =>
      void webhooks?.emitQuietly(customerId, reason === 'expired' ? 'expired' : 'cap_reached', { session_id: sessionId, reason }, sessionId),
    geo,
  });
  if (dataPlane) owned.add(() => dataPlane.close());
  owned.add(() => geo.stop());
  owned.add(() => audit.close());
  backend.attach(dataPlane);
  const sessions = new SessionService({ store: data, zones: placement, link: config.settings.link, dataPlane: () => dataPlane, changes });
  const inspect = new NodeInspect();
  // Caps per token and customer hold per instance.
  const streams = new StreamRegistry(backend.revocations, config.settings.sse);
  metrics.subscribers(() => streams.size);
  if (dataPlane?.openByZone) metrics.openConnections(() => dataPlane.openByZone!().map((o) => ({ ...o, node: LOCAL_NODE })));
  const support = await supportService(backend, owned, log, { sessions, dataPlane: () => dataPlane, nodes: inspect });
  const subscriptions = createSubscriptions(
    { data, sessions, settings: config.settings, tls, zoneName: (code) => zones.find(code)?.name },
    { store: backend.subscriptionData, clusterKey: backend.clusterKey, dataDir: opts.dataDir },
  );
  return {
    database: backend.database,
    data,
    events: backend.events,
    publish: backend.publish,
    announce: backend.announce,
    changes,
    tokenLookup: backend.tokenLookup,
    sqlite: backend.sqlite,
    zones,
    placement,
    sessions,
    limits: new LimitsService({ data, dataPlane: () => dataPlane, webhooks, changes, audit }),
    pause: new PauseService({ data, sessions, webhooks, audit }),
    clients: new ClientsService({ data, dataPlane: () => dataPlane, webhooks, changes, audit, now: wallClock }),
    dataPlane,
    tls,
    log,
    settings: config.settings,
    streams,
    webhooks,
    subscriptions,
    usage,
    thresholds,
    metrics,
    audit,
    geo,
    inspect,
    support,
    owned,
    close: () => owned.dispose(),
  };
}

/**
 * Usage thresholds: sessions touched where their counters are written (the local data plane's
 * saves on SQLite, its journal's reports on PostgreSQL, the nodes' reports), checked each second.
 */
/** Support reads: this instance's data plane and nodes and, on PostgreSQL, the other instances' (cluster/instance-ask.ts). */
async function supportService(backend: Backend, owned: Made['owned'], log: Logger, deps: Omit<SupportDeps, 'data' | 'instances'>): Promise<SupportService> {
  let instances: InstanceAsk | null = null;
  const support = new SupportService({ ...deps, data: backend.data, instances: () => instances });
  if (backend.instances) {
    const asker = new InstanceAsk({ ...backend.instances, data: backend.data, log, gather: (c, q, t) => support.gather(c, q, t) });
    await asker.start();
    owned.add(() => asker.close());
    instances = asker;
  }
  return support;
}

function thresholdWatch(opts: ServerOptions, backend: Backend, webhooks: WebhookService | null, log: Logger): ThresholdWatch {
  const watch = new ThresholdWatch({ data: backend.data, webhooks, log, ...(opts.thresholdsEveryMs ? { everyMs: opts.thresholdsEveryMs } : {}) });
  backend.onCountersApplied?.((ids) => ids.forEach((id) => watch.touch(id)));
  return watch;
}

export interface DataPlaneParts {
  opts: ServerOptions;
  config: ResolvedConfig;
  log: Logger;
  store: DataPlaneDeps['store'];
  publish: (e: EventInput) => void;
  zones: ZoneCatalogue;
  usage?: UsageHistory | null;
  metrics?: Metrics;
  /** A session's counters were saved to the store (SQLite: written at once); told its id. */
  saved?: (sessionId: string) => void;
  /** A session cut by a byte cap or its expiry (webhooks cap_reached / expired). */
  onCapped?: (customerId: string, sessionId: string, reason: 'session_cap' | 'client_cap' | 'global_cap' | 'expired') => void;
  /** Where geo-targeted proxy requests leave (cluster nodes' relays, server/cluster/geo.ts). */
  geo?: DataPlaneDeps['geo'];
}

/** The data plane of this process (unless the options replace or disable it). */
export function buildDataPlane({ opts, config, log, store, publish, zones, usage, metrics, saved, onCapped, geo }: DataPlaneParts): DataPlane | null {
  const factory = opts.dataPlane === undefined ? createDataPlane : opts.dataPlane;
  // The local data plane's bytes go to the history as the node `local`.
  const usageSink =
    usage || saved
      ? {
          add: (id: string, up: number, down: number) => {
            usage?.add(id, LOCAL_NODE, up, down);
            saved?.(id);
          },
        }
      : undefined;
  // Its refusals and bytes go to the metrics, as the node `local`.
  const observe = metrics
    ? { refused: (reason: string) => metrics.refused(reason), moved: (zone: string, up: number, down: number) => metrics.moved(zone, LOCAL_NODE, up, down), ...(onCapped ? { capped: onCapped } : {}) }
    : undefined;
  return factory
    ? factory({ store, events: { publish }, zones: { list: () => zones.list() }, log, config: config.dataPlane, ...(usageSink ? { usage: usageSink } : {}), ...(observe ? { observe } : {}), ...(geo ? { geo } : {}) })
    : null;
}
