// The service objects shared by the routes, built once per server.
import type { ServerResponse } from 'node:http';
import type { DataPlane, Logger } from './dataplane/api.ts';
import type { EventBus } from './events/bus.ts';
import type { SseOptions, StreamHandle } from './events/sse.ts';
import type { LinkSettings } from './links.ts';
import type { SessionService } from './sessions.ts';
import type { TlsCertificates, TlsStatus } from './tls/index.ts';
import type { Role, Store } from './store/store.ts';
import type { ZoneCatalogue } from './zones/catalogue.ts';

export interface Settings {
  version: string;
  /** Mutable: the listening ports are only known once the server listens. */
  link: LinkSettings;
  /** Which TLS mode is in force, why, and the certificate served (updated by reloads). */
  tls: TlsStatus;
  proxyPort: number | null;
  sse: SseOptions;
  /** One log line per request (and per event stream opened and closed). */
  logRequests: boolean;
}

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
