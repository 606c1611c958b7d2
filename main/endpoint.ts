// Which API the app talks to: the embedded server (started here on loopback, its owner token
// kept in the TokenStore) or a remote one (from the settings, or from VPN_ACCESS_REMOTE_URL
// and VPN_ACCESS_REMOTE_TOKEN for tests and support staff). It tells its owner when the
// endpoint changes, and whether it is another server (`fresh`: event ids and sessions of the
// old one mean nothing there). "Let other devices connect" restarts the embedded server bound
// to one of this machine's addresses (data plane and API; the API still wants its token),
// with that address in links and subscriptions and the `lan` egress policy; turning it off
// restarts it on loopback. The old server is closed before the new one listens. A restore
// (backup.ts) runs while the embedded server is stopped; the server that starts after it holds other
// data, so its owner hears of another server, and the stored token is checked against it once.
import { join } from 'node:path';
import type { ConnectionInfo, ConnectionSettings, LanAddress, LanSharing, LanSharingRequest } from '../common/api-types.ts';
import { fail, type Result } from '../common/result.ts';
import { startServer, type RunningServer } from '../server/serve.ts';
import type { Endpoint } from './api-client.ts';
import { trustEmbeddedServer } from './embedded-trust.ts';
import { listAddresses, pickLanAddress } from './lan.ts';
import { checkRemoteUrl } from './remote-url.ts';
import type { Settings, SettingsFile } from './settings.ts';
import { TokenUnreadable, type TokenStore } from './token-store.ts';

export interface EndpointsOptions {
  userData: string;
  settings: SettingsFile;
  tokens: TokenStore;
  /** A remote server that overrides the settings (from the environment), or null. */
  override: Endpoint | null;
  /** Called after every selection; `fresh` when the base URL changed. */
  onChange(fresh: boolean): void;
  /** This machine's addresses (tests pass their own). Default: os.networkInterfaces(). */
  addresses?: () => LanAddress[];
  /** Tests that relay to their own loopback targets widen the egress policy ('allow-all'); the app never sets it. */
  egress?: 'allow-all';
}

/** Where the embedded server listens, what links say, and its egress policy. */
export interface EmbeddedBind {
  host: string;
  publicHost: string;
  egress?: 'lan';
}

/** The customer the embedded server's first start makes (a restored backup may bring another: Settings.embeddedCustomer). */
export const EMBEDDED_CUSTOMER = 'local';

export const LOOPBACK_BIND: EmbeddedBind = { host: '127.0.0.1', publicHost: '127.0.0.1' };

/** The bind the saved settings ask for: the chosen address while sharing is on, else loopback. */
export function embeddedBind(lan: Settings['lanSharing']): EmbeddedBind {
  return lan?.enabled && lan.address ? { host: lan.address, publicHost: lan.address, egress: 'lan' } : LOOPBACK_BIND;
}

/**
 * Starts the embedded server (the path the desktop app uses): API and VLESS over ws on `port`
 * (a free one if that is taken), the raw TCP inbound and the proxy on free ports, all on
 * `bind.host`.
 */
export async function startEmbeddedServer(dataDir: string, port: number, bind: EmbeddedBind, egress?: 'allow-all', customer = EMBEDDED_CUSTOMER): Promise<RunningServer> {
  const opts = { dataDir, host: bind.host, publicHost: bind.publicHost, egress: egress ?? bind.egress, firstCustomer: customer };
  try {
    return await startServer({ ...opts, port });
  } catch (e) {
    if ((e as { code?: string }).code !== 'EADDRINUSE' || port === 0) throw e;
    return startServer({ ...opts, port: 0 });
  }
}

export class Endpoints {
  #opts: EndpointsOptions;
  #server: RunningServer | null = null;
  #current: Endpoint | null = null;
  /** Restarts run one after another. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Why the stored token could not be used (shown on the window's token screen), or null. */
  #problem: string | null = null;
  /** After a restore: whether the stored token signs in to the restored data is checked once. */
  #checkToken = false;
  /** Whether that check made a new owner token (what `replaceData` returns with the work's result). */
  #tokenRenewed = false;
  readonly serverDir: string;

  constructor(opts: EndpointsOptions) {
    this.#opts = opts;
    this.serverDir = join(opts.userData, 'server');
  }

  current(): Endpoint | null {
    return this.#current;
  }

  /**
   * Picks the endpoint the settings (or the environment) ask for, starting the embedded server if
   * needed. Its owner is told the server is another one when its URL changed, or when `change` says.
   */
  async select(change: 'same' | 'by-url' | 'other' = 'by-url'): Promise<void> {
    const { settings, tokens, override } = this.#opts;
    const before = this.#current?.baseUrl;
    const s = settings.get();
    this.#problem = null;
    try {
      if (override) this.#current = override;
      else if (s.mode === 'remote' && s.remoteBaseUrl) {
        const token = tokens.read('remote');
        this.#current = token ? { baseUrl: s.remoteBaseUrl, token } : null;
      } else this.#current = await this.#startEmbedded();
    } catch (e) {
      if (!(e instanceof TokenUnreadable)) throw e;
      // Never a new token or a plain-text copy behind the user's back: say what happened.
      this.#current = null;
      this.#problem = s.mode === 'remote'
        ? `${e.message} Enter the server's API token again below to store it anew, or unlock the system keychain and restart the app.`
        : `${e.message} Unlock the system keychain (log in to the desktop session; on Linux GNOME Keyring or KWallet) and restart the app. ` +
          `To start over instead, delete ${e.file} and restart: a new owner token is then created (the old one stays valid until revoked with "vpn-access token revoke").`;
      console.error(this.#problem);
    }
    this.#opts.onChange(change === 'other' || (change === 'by-url' && this.#current?.baseUrl !== before));
  }

  /** Stores new connection settings (the remote token encrypted) and selects again. */
  async save(c: ConnectionSettings): Promise<Result<ConnectionInfo>> {
    const { settings, tokens } = this.#opts;
    if (c.mode === 'remote') {
      if (c.remoteToken !== undefined && (typeof c.remoteToken !== 'string' || c.remoteToken.length > 4096)) return fail(400, 'invalid_request', 'The API token must be text.');
      const checked = checkRemoteUrl(c.remoteBaseUrl, c.allowPlainHttp === true);
      if ('refusal' in checked) return fail(400, 'invalid_request', checked.refusal);
      // The stored token belongs to the URL it was entered for: never send it to another one.
      if (!c.remoteToken && checked.url !== settings.get().remoteBaseUrl) {
        return fail(400, 'invalid_request', 'Enter the API token for this server: the stored token is only ever sent to the server it was entered for.');
      }
      if (c.remoteToken) tokens.write('remote', c.remoteToken);
      settings.update({ mode: 'remote', remoteBaseUrl: checked.url });
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
      ...(this.#problem ? { tokenProblem: this.#problem } : {}),
    };
  }

  async #startEmbedded(): Promise<Endpoint> {
    const { settings, tokens } = this.#opts;
    if (!this.#server) {
      const s = settings.get();
      const customer = s.embeddedCustomer ?? EMBEDDED_CUSTOMER;
      let server: RunningServer;
      try {
        server = await startEmbeddedServer(this.serverDir, s.embeddedPort ?? 0, embeddedBind(s.lanSharing), this.#opts.egress, customer);
      } catch (e) {
        if (!s.lanSharing?.enabled) throw e;
        // The chosen address is gone (another network, a cable out): back to loopback, sharing off.
        settings.update({ lanSharing: { ...s.lanSharing, enabled: false } });
        server = await startEmbeddedServer(this.serverDir, s.embeddedPort ?? 0, LOOPBACK_BIND, this.#opts.egress, customer);
      }
      this.#server = server;
      trustEmbeddedServer(server);
      // Keep the port: configuration links handed out earlier carry it.
      if (settings.get().embeddedPort !== server.apiPort) settings.update({ embeddedPort: server.apiPort });
      const stale = this.#checkToken && !(await this.#ownerOf(server, customer));
      this.#checkToken = false;
      this.#tokenRenewed = !server.ownerToken && stale;
      if (server.ownerToken) tokens.write('embedded', server.ownerToken);
      else if (stale || !tokens.read('embedded')) tokens.write('embedded', (await server.services.data.createToken(customer, 'owner')).token);
    }
    return { baseUrl: this.#server.baseUrl, token: tokens.read('embedded') ?? '' };
  }

  /** Whether the stored token is an owner token of `customer` in the server's data. */
  async #ownerOf(server: RunningServer, customer: string): Promise<boolean> {
    const stored = this.#opts.tokens.read('embedded');
    const info = stored ? await server.services.data.findToken(stored) : undefined;
    return info?.customer_name === customer && info.role === 'owner';
  }

  /**
   * Stops the embedded server, runs `work` on its data folder (a restore), and starts it again:
   * to the app another server (other data), whose token is checked once. Returns the work's result
   * and whether that check had to make a new owner token.
   */
  replaceData<T>(work: (dataDir: string) => Promise<T>): Promise<{ value: T; tokenRenewed: boolean }> {
    const run = this.#queue.then(async () => {
      const old = this.#server;
      this.#server = null;
      await old?.close().catch(() => {});
      this.#tokenRenewed = false;
      let value: T;
      try {
        value = await work(this.serverDir);
      } finally {
        this.#checkToken = true;
        await this.select('other');
      }
      return { value, tokenRenewed: this.#tokenRenewed };
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /** The running embedded server, if any (tests read its ports). */
  get server(): RunningServer | null {
    return this.#server;
  }

  #addresses(): LanAddress[] {
    return (this.#opts.addresses ?? listAddresses)();
  }

  /** What Settings shows about "Let other devices connect". */
  lanSharing(): LanSharing {
    const s = this.#opts.settings.get();
    const addresses = this.#addresses();
    const supported = !this.#opts.override && s.mode !== 'remote';
    return {
      supported,
      reason: supported ? undefined : 'The app uses a remote server: other devices connect to that server, not to this computer.',
      enabled: supported && !!s.lanSharing?.enabled,
      address: s.lanSharing?.address ?? null,
      addresses,
      suggested: pickLanAddress(addresses),
    };
  }

  /** Turns sharing on (on `address`) or off, and restarts the embedded server to match. */
  setLanSharing(req: LanSharingRequest): Promise<Result<LanSharing>> {
    const run = this.#queue.then(() => this.#setLanSharing(req));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #setLanSharing(req: LanSharingRequest): Promise<Result<LanSharing>> {
    const { settings, override } = this.#opts;
    if (override || settings.get().mode === 'remote') return fail(409, 'not_supported', 'Other devices can only connect to the embedded server; the app uses a remote one.');
    const before = settings.get().lanSharing;
    if (req.enabled) {
      const address = req.address ?? before?.address ?? pickLanAddress(this.#addresses());
      if (!address) return fail(400, 'invalid_request', 'This computer has no network address other devices could reach.');
      if (!this.#addresses().some((a) => a.address === address)) {
        return fail(400, 'invalid_request', `${address} is not an address of this computer's network interfaces.`, { address });
      }
      settings.update({ lanSharing: { enabled: true, address } });
    } else if (before) settings.update({ lanSharing: { ...before, enabled: false } });
    try {
      await this.restartEmbedded();
    } catch (e) {
      settings.update({ lanSharing: before ? { ...before, enabled: false } : undefined });
      await this.restartEmbedded();
      return fail(500, 'internal_error', `The server could not listen on ${req.address ?? 'that address'}: ${e instanceof Error ? e.message : String(e)}`);
    }
    return { ok: true, value: this.lanSharing() };
  }

  /** Closes the embedded server (its listeners and streams) and starts it again from the settings. */
  async restartEmbedded(): Promise<void> {
    const old = this.#server;
    this.#server = null;
    await old?.close().catch(() => {});
    await this.select('same');
  }

  /** Stops the embedded server, if it was started. */
  async dispose(): Promise<void> {
    await this.#server?.close().catch(() => {});
    this.#server = null;
  }
}
