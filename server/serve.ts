// startServer(options): builds the service and listens: the API (and VLESS over ws) on one
// port, the raw-TCP VLESS inbound and the HTTP proxy on their own. Used by the CLI and the desktop app.
import type { AddressInfo } from 'node:net';
import { buildServer, type BuiltServer, type ServerOptions } from './app.ts';
import { isWildcardHost } from './public-host.ts';

export interface StartOptions extends ServerOptions {
  /** API port; 0 picks a free one. Default 8787. */
  port?: number;
  /** The customer created, with an owner token, when the data folder is new. Default "default". */
  firstCustomer?: string;
}

export interface RunningServer extends BuiltServer {
  origin: string;
  baseUrl: string;
  apiPort: number;
  vlessTcpPort: number | null;
  proxyPort: number | null;
  /** Plain owner token, only when this start created the first customer; it is never shown again. */
  ownerToken?: string;
  close(): Promise<void>;
}

export async function startServer(opts: StartOptions): Promise<RunningServer> {
  const host = opts.host ?? '127.0.0.1';
  const built = await buildServer({ ...opts, host });
  const { app, services } = built;
  let ownerToken: string | undefined;
  try {
    await app.listen({ host, port: opts.port ?? 8787 });
    const apiPort = (app.server.address() as AddressInfo).port;
    services.settings.link.wsPort = opts.publicPort ?? apiPort;
    const ports = services.dataPlane ? await services.dataPlane.start() : { vlessTcpPort: null, proxyPort: null };
    services.settings.link.tcpPort = ports.vlessTcpPort;
    services.settings.proxyPort = ports.proxyPort;
    // The first customer and its owner token only once every listener is bound: a start that
    // fails (a port in use) must not make a token nobody was shown. Several instances on one
    // database may start at once and all see it empty: only the one whose insert created the
    // first customer (ensureCustomer is race-free) makes its token.
    if ((await services.data.countCustomers()) === 0) {
      const first = opts.firstCustomer ?? 'default';
      if ((await services.data.ensureCustomer(first)).created) ownerToken = (await services.data.createToken(first, 'owner')).token;
    }
    // A wildcard bind is reached at the public host (server/public-host.ts), else at loopback.
    const reachedAt = isWildcardHost(host) ? opts.publicHost ?? '127.0.0.1' : host;
    const shownHost = reachedAt.includes(':') ? `[${reachedAt}]` : reachedAt;
    const origin = `${services.tls.enabled ? 'https' : 'http'}://${shownHost}:${apiPort}`;
    let closing: Promise<void> | undefined;
    return {
      ...built,
      origin,
      baseUrl: `${origin}/v2`,
      apiPort,
      vlessTcpPort: ports.vlessTcpPort,
      proxyPort: ports.proxyPort,
      ownerToken,
      close: () => (closing ??= app.close()),
    };
  } catch (err) {
    await app.close();
    throw err;
  }
}
