// The service objects shared by the routes, built once per server by createServices: on the
// embedded SQLite store (the default) or, with `database`, on PostgreSQL (the cluster's control
// plane, several `serve` processes on one database). The routes and the session service only
// see the async store seam (`data`, store/control.ts) and the event source (`events`), so they
// run unchanged on either.
import type { ServerResponse } from 'node:http';
import type { SessionEvent } from './contract/schemas.ts';
import type { DataPlane, DataPlaneDeps } from './dataplane/api.ts';
import { createDataPlane } from './dataplane/index.ts';
import { ServeGeoRoutes } from './cluster/geo.ts';
import type { EventInput, Logger } from './domain.ts';
import { EventBus } from './events/bus.ts';
import { DEFAULT_MAX_STREAMS_PER_CUSTOMER, DEFAULT_MAX_STREAMS_PER_TOKEN, errorFrame, type EventLogSource, type SseOptions, type StreamHandle } from './events/sse.ts';
import type { ResolvedConfig, ServerOptions, Settings } from './http/config.ts';
import { silentLogger } from './log.ts';
import { TokenCache } from './plugins/auth.ts';
import { SessionService } from './sessions.ts';
import type { TlsCertificates } from './tls/index.ts';
import { type ControlStore, sqliteControlStore } from './store/control.ts';
import { openDatabase } from './store/db.ts';
import { type Role, Store, type TokenInfo } from './store/store.ts';
import { ZoneCatalogue } from './zones/catalogue.ts';
import { ZonePlacement } from './cluster/placement.ts';
import { LOCAL_NODE, UsageHistory } from './usage/history.ts';
import { Metrics, timedStore } from './metrics.ts';
import { AuditTrail } from './audit/trail.ts';
import type { WebhookEventKind } from './contract/webhooks.ts';
import type { WebhookEmitter } from './webhooks/service.ts';

/** Settings live with the rest of the resolved configuration; re-exported for the routes' callers. */
export type { Settings } from './http/config.ts';

/** How often open streams' tokens are checked for revocation (revoked streams close within a second). */
const REVOCATION_CHECK_MS = 200;

interface OpenStream {
  handle: StreamHandle;
  tokenId: string;
  customerId: string;
}

/**
 * Open event streams: closing the server ends them; each is tied to its token, so revoking the
 * token (through this process's Store, or by another process such as `vpn-access token revoke`,
 * seen through SQLite's data_version) closes it within a second; and streams are capped per
 * token and per customer.
 */
export class StreamRegistry {
  private readonly open = new Set<OpenStream>();
  private readonly store: Pick<Store, 'tokenGeneration' | 'dataVersion' | 'isTokenActive'> | undefined;
  private readonly perToken: number;
  private readonly perCustomer: number;
  private watch: NodeJS.Timeout | undefined;
  private seen = { generation: -1, dataVersion: -1 };

  constructor(store?: Pick<Store, 'tokenGeneration' | 'dataVersion' | 'isTokenActive'>, options: Partial<SseOptions> = {}) {
    this.store = store;
    this.perToken = options.maxStreamsPerToken ?? DEFAULT_MAX_STREAMS_PER_TOKEN;
    this.perCustomer = options.maxStreamsPerCustomer ?? DEFAULT_MAX_STREAMS_PER_CUSTOMER;
  }

  /** Which cap a new stream of this caller would exceed, if any. */
  refusal(caller: { tokenId: string; customerId: string }): { scope: 'token' | 'customer'; limit: number } | undefined {
    let token = 0;
    let customer = 0;
    for (const s of this.open) {
      if (s.tokenId === caller.tokenId) token++;
      if (s.customerId === caller.customerId) customer++;
    }
    if (token >= this.perToken) return { scope: 'token', limit: this.perToken };
    if (customer >= this.perCustomer) return { scope: 'customer', limit: this.perCustomer };
    return undefined;
  }

  add(handle: StreamHandle, res: ServerResponse, caller: { tokenId: string; customerId: string } = { tokenId: '', customerId: '' }): void {
    const entry: OpenStream = { handle, tokenId: caller.tokenId, customerId: caller.customerId };
    this.open.add(entry);
    res.on('close', () => {
      this.open.delete(entry);
      if (this.open.size === 0) this.stopWatch();
    });
    this.startWatch();
  }

  get size(): number {
    return this.open.size;
  }

  closeAll(): void {
    for (const s of this.open) s.handle.close();
    this.open.clear();
    this.stopWatch();
  }

  private startWatch(): void {
    if (this.watch || !this.store) return;
    this.seen = { generation: this.store.tokenGeneration, dataVersion: this.store.dataVersion() };
    this.watch = setInterval(() => this.checkRevoked(), REVOCATION_CHECK_MS);
    this.watch.unref();
  }

  private stopWatch(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = undefined;
  }

  /** Closes the streams of tokens revoked since the last check (cheap when nothing changed). */
  private checkRevoked(): void {
    const store = this.store;
    if (!store) return;
    try {
      const now = { generation: store.tokenGeneration, dataVersion: store.dataVersion() };
      if (now.generation === this.seen.generation && now.dataVersion === this.seen.dataVersion) return;
      this.seen = now;
      const verdict = new Map<string, boolean>();
      for (const s of [...this.open]) {
        if (!s.tokenId) continue;
        let active = verdict.get(s.tokenId);
        if (active === undefined) verdict.set(s.tokenId, (active = store.isTokenActive(s.tokenId)));
        if (active) continue;
        this.open.delete(s);
        s.handle.closeWith(errorFrame({ error: { code: 'unauthorized', message: 'The API token was revoked.', details: {} } }));
      }
    } catch {
      // The database is closing: the server's own close ends the streams.
    }
  }
}

/** Token look-ups of the API guard: synchronous on SQLite, a Promise on PostgreSQL. */
export interface TokenLookup {
  find(token: string): TokenInfo | undefined | Promise<TokenInfo | undefined>;
}

export interface Services {
  /** Which database the control plane runs on. */
  database: 'sqlite' | 'postgres';
  /** The async store seam: what the session service and the routes use, on either database. */
  data: ControlStore;
  /** The event log as the event stream reads it (replay, then live). */
  events: EventLogSource;
  /** Persists an event and wakes its readers (the data plane's events go through here). */
  publish(e: EventInput): Promise<SessionEvent>;
  /** Wakes the readers of events already stored (a node report's, stored with its counters). */
  announce(stored: Array<{ customerId: string; event: SessionEvent }>): void;
  /** The API's token look-ups (cached). */
  tokenLookup: TokenLookup;
  /** SQLite mode only: the synchronous store (tests and subscriptions use it). Throws on PostgreSQL. */
  store: Store;
  /** SQLite mode only: the in-process event bus. Throws on PostgreSQL. */
  bus: EventBus;
  zones: ZoneCatalogue;
  placement: ZonePlacement;
  sessions: SessionService;
  dataPlane: DataPlane | null;
  /** The certificate of every listener; `reload()` re-reads given files (SIGHUP). */
  tls: TlsCertificates;
  log: Logger;
  settings: Settings;
  streams: StreamRegistry;
  /** SQLite mode only (synchronous); on either database use `data.createToken`. */
  tokens: { create(opts: { customer: string; role: Role }): string };
  /** Webhooks, set by buildServer unless `webhooks: false`: emit() queues an event kind
   *  outside the event log (pause, resume, limits changed, cap reached, expired). */
  webhooks?: WebhookEmitter & { emitQuietly(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>, sessionId?: string): Promise<void> };
  /** Releases the store (and on PostgreSQL the listener, the event feed, the data plane's view). */
  close(): Promise<void>;
  /** Usage history writer; null with `usageHistory: false`. */
  usage: UsageHistory | null;
  /** This instance's Prometheus metrics (server/metrics.ts), served at GET /metrics. */
  metrics: Metrics;
  /** The audit trail (server/audit/trail.ts): who changed what, read at GET /v2/audit. */
  audit: AuditTrail;
  /** Where geo-targeted proxy requests leave, and the up nodes' relays (server/cluster/geo.ts). */
  geo: ServeGeoRoutes;
}

/**
 * What a data plane's cut by a cap or an expiry becomes: a webhook event (cap_reached, expired),
 * through the services' webhooks once buildServer has set them (`self()` is read at the time).
 */
export function cappedToWebhooks(self: () => Services | undefined) {
  return (customerId: string, sessionId: string, reason: 'session_cap' | 'client_cap' | 'global_cap' | 'expired') =>
    void self()?.webhooks?.emitQuietly(customerId, reason === 'expired' ? 'expired' : 'cap_reached', { session_id: sessionId, reason }, sessionId);
}

/** The metrics of a new instance, with its event streams and its data plane's open connections. */
export function instanceMetrics(metrics: Metrics, streams: StreamRegistry, dataPlane: DataPlane | null): void {
  metrics.subscribers(() => streams.size);
  if (dataPlane?.openByZone) metrics.openConnections(() => dataPlane.openByZone!().map((o) => ({ ...o, node: LOCAL_NODE })));
}

/** The usage history writer the options ask for (server/usage/history.ts), or null. */
export function buildUsageHistory(opts: ServerOptions, data: ControlStore, log: Logger): UsageHistory | null {
  if (opts.usageHistory === false) return null;
  return new UsageHistory(data, log, typeof opts.usageHistory === 'object' ? opts.usageHistory : {});
}

/** Opens the store, loads the zones and builds the event bus, the data plane (unless the
 *  options replace or disable it) and the session service on top of them. */
export async function createServices(opts: ServerOptions, config: ResolvedConfig, tls: TlsCertificates): Promise<Services> {
  if (opts.database) {
    // Loaded only in this mode: the single-process mode never loads the PostgreSQL client.
    const { createClusterServices } = await import('./cluster/services.ts');
    return createClusterServices(opts, config, tls, opts.database);
  }
  const log = opts.logger ?? silentLogger;
  const store = new Store(openDatabase(opts.dataDir));
  const metrics = new Metrics();
  const data = timedStore(sqliteControlStore(store), metrics);
  const zones = ZoneCatalogue.load(opts.zonesFile);
  const placement = new ZonePlacement(zones, data);
  const bus = new EventBus(store);
  const usage = buildUsageHistory(opts, data, log);
  let self: Services | undefined;
  const geo = new ServeGeoRoutes(data, () => zones.list());
  geo.start();
  const dataPlane = buildDataPlane(opts, config, log, store, (e) => void bus.publish(e), zones, usage, metrics, cappedToWebhooks(() => self), geo);
  const sessions = new SessionService({ store: data, zones: placement, link: config.settings.link, dataPlane: () => dataPlane });
  const streams = new StreamRegistry(store, config.settings.sse);
  instanceMetrics(metrics, streams, dataPlane);
  const audit = new AuditTrail(data, log);
  self = {
    database: 'sqlite',
    data,
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
    store,
    bus,
    zones,
    placement,
    sessions,
    dataPlane,
    tls,
    log,
    settings: config.settings,
    streams,
    tokens: { create: ({ customer, role }) => store.createToken(customer, role).token },
    usage,
    metrics,
    audit,
    geo,
    close: async () => {
      audit.close();
      geo.stop();
      if (dataPlane) await dataPlane.close();
      await usage?.close();
      store.db.close();
    },
  };
  return self;
}

/** The data plane of this process (unless the options replace or disable it). */
export function buildDataPlane(
  opts: ServerOptions,
  config: ResolvedConfig,
  log: Logger,
  store: DataPlaneDeps['store'],
  publish: (e: EventInput) => void,
  zones: ZoneCatalogue,
  usage?: UsageHistory | null,
  metrics?: Metrics,
  /** A session cut by a byte cap or its expiry (webhooks cap_reached / expired). */
  onCapped?: (customerId: string, sessionId: string, reason: 'session_cap' | 'client_cap' | 'global_cap' | 'expired') => void,
  /** Where geo-targeted proxy requests leave (cluster nodes' relays, server/cluster/geo.ts). */
  geo?: DataPlaneDeps['geo'],
): DataPlane | null {
  const factory = opts.dataPlane === undefined ? createDataPlane : opts.dataPlane;
  // The local data plane's bytes go to the history as the node `local`.
  const usageSink = usage ? { add: (id: string, up: number, down: number) => usage.add(id, LOCAL_NODE, up, down) } : undefined;
  // Its refusals and bytes go to the metrics, as the node `local`.
  const observe = metrics
    ? { refused: (reason: string) => metrics.refused(reason), moved: (zone: string, up: number, down: number) => metrics.moved(zone, LOCAL_NODE, up, down), ...(onCapped ? { capped: onCapped } : {}) }
    : undefined;
  return factory
    ? factory({ store, events: { publish }, zones: { list: () => zones.list() }, log, config: config.dataPlane, ...(usageSink ? { usage: usageSink } : {}), ...(observe ? { observe } : {}), ...(geo ? { geo } : {}) })
    : null;
}
