// The service objects shared by the routes, built once per server by createServices: on the
// embedded SQLite store (the default) or, with `database`, on PostgreSQL (the cluster's control
// plane, several `serve` processes on one database). The routes and the session service only
// see the async store seam (`data`, store/control.ts) and the event source (`events`), so they
// run unchanged on either.
import type { ServerResponse } from 'node:http';
import type { SessionEvent } from './contract/schemas.ts';
import type { DataPlane, DataPlaneDeps } from './dataplane/api.ts';
import { createDataPlane } from './dataplane/index.ts';
import type { EventInput, Logger } from './domain.ts';
import { EventBus } from './events/bus.ts';
import type { EventLogSource, StreamHandle } from './events/sse.ts';
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

/** Settings live with the rest of the resolved configuration; re-exported for the routes' callers. */
export type { Settings } from './http/config.ts';

/** Open event streams, so that closing the server can end them. */
export class StreamRegistry {
  private readonly open = new Set<StreamHandle>();
  add(handle: StreamHandle, res: ServerResponse): void {
    this.open.add(handle);
    res.on('close', () => this.open.delete(handle));
  }
  get size(): number {
    return this.open.size;
  }
  closeAll(): void {
    for (const h of this.open) h.close();
    this.open.clear();
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
  /** Releases the store (and on PostgreSQL the listener, the event feed, the data plane's view). */
  close(): Promise<void>;
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
  const data = sqliteControlStore(store);
  const zones = ZoneCatalogue.load(opts.zonesFile);
  const placement = new ZonePlacement(zones, data);
  const bus = new EventBus(store);
  const dataPlane = buildDataPlane(opts, config, log, store, (e) => void bus.publish(e), zones);
  const sessions = new SessionService({ store: data, zones: placement, link: config.settings.link, dataPlane: () => dataPlane });
  return {
    database: 'sqlite',
    data,
    events: {
      eventsAfter: (customerId, afterId, filter, limit) => store.eventsAfter(customerId, afterId, filter, limit),
      subscribe: (sub) => bus.subscribe(sub),
      fromLog: false,
    },
    publish: (e) => Promise.resolve(bus.publish(e)),
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
    streams: new StreamRegistry(),
    tokens: { create: ({ customer, role }) => store.createToken(customer, role).token },
    close: async () => {
      if (dataPlane) await dataPlane.close();
      store.db.close();
    },
  };
}

/** The data plane of this process (unless the options replace or disable it). */
export function buildDataPlane(
  opts: ServerOptions,
  config: ResolvedConfig,
  log: Logger,
  store: DataPlaneDeps['store'],
  publish: (e: EventInput) => void,
  zones: ZoneCatalogue,
): DataPlane | null {
  const factory = opts.dataPlane === undefined ? createDataPlane : opts.dataPlane;
  return factory ? factory({ store, events: { publish }, zones: { list: () => zones.list() }, log, config: config.dataPlane }) : null;
}
