// Which API the app talks to: the embedded server (started here on loopback, its owner token
// kept in the TokenStore) or a remote one (from the settings, or from VPN_ACCESS_REMOTE_URL
// and VPN_ACCESS_REMOTE_TOKEN for tests and support staff). It tells its owner when the
// endpoint changes, and whether it is another server (`fresh`: event ids and sessions of the
// old one mean nothing there).
import { join } from 'node:path';
import type { ConnectionInfo, ConnectionSettings } from '../common/api-types.ts';
import { fail, type Result } from '../common/result.ts';
import { startServer, type RunningServer } from '../server/serve.ts';
import type { Endpoint } from './api-client.ts';
import type { SettingsFile } from './settings.ts';
import type { TokenStore } from './token-store.ts';

export interface EndpointsOptions {
  userData: string;
  settings: SettingsFile;
  tokens: TokenStore;
  /** A remote server that overrides the settings (from the environment), or null. */
  override: Endpoint | null;
  /** Called after every selection; `fresh` when the base URL changed. */
  onChange(fresh: boolean): void;
}

/** The remote endpoint the environment names, if both variables are set. */
export function endpointFromEnv(env: NodeJS.ProcessEnv): Endpoint | null {
  return env.VPN_ACCESS_REMOTE_URL && env.VPN_ACCESS_REMOTE_TOKEN ? { baseUrl: env.VPN_ACCESS_REMOTE_URL.replace(/\/$/, ''), token: env.VPN_ACCESS_REMOTE_TOKEN } : null;
}

export class Endpoints {
  #opts: EndpointsOptions;
  #server: RunningServer | null = null;
  #current: Endpoint | null = null;
  readonly serverDir: string;

  constructor(opts: EndpointsOptions) {
    this.#opts = opts;
    this.serverDir = join(opts.userData, 'server');
  }

  current(): Endpoint | null {
    return this.#current;
  }

  /** Picks the endpoint the settings (or the environment) ask for, starting the embedded server if needed. */
  async select(): Promise<void> {
    const { settings, tokens, override } = this.#opts;
    const before = this.#current?.baseUrl;
    const s = settings.get();
    if (override) this.#current = override;
    else if (s.mode === 'remote' && s.remoteBaseUrl) {
      const token = tokens.read('remote');
      this.#current = token ? { baseUrl: s.remoteBaseUrl, token } : null;
    } else this.#current = await this.#startEmbedded();
    this.#opts.onChange(this.#current?.baseUrl !== before);
  }

  /** Stores new connection settings (the remote token encrypted) and selects again. */
  async save(c: ConnectionSettings): Promise<Result<ConnectionInfo>> {
    const { settings, tokens } = this.#opts;
    if (c.mode === 'remote') {
      if (!c.remoteBaseUrl || !/^https?:\/\//.test(c.remoteBaseUrl)) return fail(400, 'invalid_request', 'Enter an http(s) base URL.');
      if (c.remoteToken) tokens.write('remote', c.remoteToken);
      settings.update({ mode: 'remote', remoteBaseUrl: c.remoteBaseUrl.replace(/\/$/, '') });
    } else settings.update({ mode: 'embedded' });
    await this.select();
    return { ok: true, value: this.info() };
  }

  /** What the Settings screen shows (never the token). */
  info(): ConnectionInfo {
    const s = this.#opts.settings.get();
    const mode = this.#opts.override || s.mode === 'remote' ? 'remote' : 'embedded';
    return {
      mode,
      baseUrl: this.#current?.baseUrl ?? s.remoteBaseUrl ?? '',
      hasToken: !!this.#current?.token,
      dataDir: mode === 'embedded' ? this.serverDir : undefined,
      tokenStorage: this.#opts.tokens.describe(),
    };
  }

  async #startEmbedded(): Promise<Endpoint> {
    const { settings, tokens } = this.#opts;
    if (!this.#server) {
      const opts = { dataDir: this.serverDir, host: '127.0.0.1', firstCustomer: 'local' };
      let server: RunningServer;
      try {
        server = await startServer({ ...opts, port: settings.get().embeddedPort ?? 0 });
      } catch (e) {
        if ((e as { code?: string }).code !== 'EADDRINUSE') throw e;
        server = await startServer({ ...opts, port: 0 });
      }
      this.#server = server;
      // Keep the port: configuration links handed out earlier carry it.
      if (settings.get().embeddedPort !== server.apiPort) settings.update({ embeddedPort: server.apiPort });
      if (server.ownerToken) tokens.write('embedded', server.ownerToken);
      else if (!tokens.read('embedded')) tokens.write('embedded', server.services.tokens.create({ customer: 'local', role: 'owner' }));
    }
    return { baseUrl: this.#server.baseUrl, token: tokens.read('embedded') ?? '' };
  }

  /** Stops the embedded server, if it was started. */
  async dispose(): Promise<void> {
    await this.#server?.close().catch(() => {});
    this.#server = null;
  }
}
