// The service objects shared by the routes, built once per server by createServices.
import type { ServerResponse } from 'node:http';
import type { DataPlane } from './dataplane/api.ts';
import { createDataPlane } from './dataplane/index.ts';
import type { Logger } from './domain.ts';
import { EventBus } from './events/bus.ts';
import type { StreamHandle } from './events/sse.ts';
import type { ResolvedConfig, ServerOptions, Settings } from './http/config.ts';
import { silentLogger } from './log.ts';
import { SessionService } from './sessions.ts';
import type { TlsCertificates } from './tls/index.ts';
import { openDatabase } from './store/db.ts';
import { type Role, Store } from './store/store.ts';
import { ZoneCatalogue } from './zones/catalogue.ts';

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

export interface Services {
  store: Store;
  bus: EventBus;
  zones: ZoneCatalogue;
  sessions: SessionService;
  dataPlane: DataPlane | null;
  /** The certificate of every listener; `reload()` re-reads given files (SIGHUP). */
  tls: TlsCertificates;
  log: Logger;
  settings: Settings;
  streams: StreamRegistry;
  tokens: { create(opts: { customer: string; role: Role }): string };
}

/** Opens the store, loads the zones and builds the event bus, the data plane (unless the
 *  options replace or disable it) and the session service on top of them. */
export function createServices(opts: ServerOptions, config: ResolvedConfig, tls: TlsCertificates): Services {
  const log = opts.logger ?? silentLogger;
  const store = new Store(openDatabase(opts.dataDir));
  const zones = ZoneCatalogue.load(opts.zonesFile);
  const bus = new EventBus(store);
  const factory = opts.dataPlane === undefined ? createDataPlane : opts.dataPlane;
  const dataPlane = factory
    ? factory({
        store,
        events: { publish: (e) => void bus.publish(e) },
        zones: { list: () => zones.list() },
        log,
        config: config.dataPlane,
      })
    : null;
  const sessions = new SessionService({ store, zones, link: config.settings.link, dataPlane: () => dataPlane });
  return {
    store,
    bus,
    zones,
    sessions,
    dataPlane,
    tls,
    log,
    settings: config.settings,
    streams: new StreamRegistry(),
    tokens: { create: ({ customer, role }) => store.createToken(customer, role).token },
  };
}
