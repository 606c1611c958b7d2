// The service objects shared by the routes, built once per server by createServices.
import type { ServerResponse } from 'node:http';
import type { DataPlane } from './dataplane/api.ts';
import { createDataPlane } from './dataplane/index.ts';
import type { Logger } from './domain.ts';
import { EventBus } from './events/bus.ts';
import { DEFAULT_MAX_STREAMS_PER_CUSTOMER, DEFAULT_MAX_STREAMS_PER_TOKEN, errorFrame, type SseOptions, type StreamHandle } from './events/sse.ts';
import type { ResolvedConfig, ServerOptions, Settings } from './http/config.ts';
import { silentLogger } from './log.ts';
import { SessionService } from './sessions.ts';
import type { TlsCertificates } from './tls/index.ts';
import { openDatabase } from './store/db.ts';
import { type Role, Store } from './store/store.ts';
import { ZoneCatalogue } from './zones/catalogue.ts';

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
    streams: new StreamRegistry(store, config.settings.sse),
    tokens: { create: ({ customer, role }) => store.createToken(customer, role).token },
  };
}
