// A node's listeners: the data plane (VLESS over WebSocket on an http(s) server of its own, the
// raw TCP inbound, the proxy), one TLS certificate for all of them (reloaded, or made for the
// node's public host), and the geo relay listener (TLS with a self-signed certificate of its
// own, pinned by the entries). What they are bound to is what the node reports (`ports`).
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as TlsServer } from 'node:tls';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { createDataPlane } from '../dataplane/index.ts';
import type { DataPlane } from '../dataplane/api.ts';
import { NODE_WS_PATH } from '../cluster/node-channel.ts';
import type { CounterJournal } from '../cluster/journal.ts';
import { createRelayServer } from './relay-server.ts';
import { loadOrCreateSelfSigned } from '../tls/self-signed.ts';
import { pinOf, TlsCertificates } from '../tls/certificates.ts';
import { LINK_ALPN } from '../tls/index.ts';
import { hashToken } from '../store/store.ts';
import type { NodeRunOptions } from './options.ts';
import type { NodeView } from './view.ts';
import type { NodeGeo } from './geo-routes.ts';

/** What a node reports it listens on, with its TLS facts. */
export interface NodePorts {
  vless_ws_port: number;
  vless_tcp_port: number | null;
  proxy_port: number | null;
  relay_port?: number;
  relay_pcs?: string;
  tls: boolean;
  tls_pcs: string | null;
}

export interface NodeListeners {
  dataPlane: DataPlane;
  /** Kept current: a certificate reloaded or made changes its TLS facts. */
  ports: NodePorts;
  relay: ReturnType<typeof createRelayServer> | null;
  /** Closes the http(s) server, the relay listener and the certificate watch (the data plane is closed before). */
  close(): Promise<void>;
}

const isWildcard = (host: string) => host === '0.0.0.0' || host === '::';

/** The TLS facts a node reports with its ports: on or off, and the pin of a self-signed certificate. */
function tlsFacts(tls: TlsCertificates): { tls: boolean; tls_pcs: string | null } {
  const cert = tls.certificate;
  return { tls: tls.enabled, tls_pcs: tls.enabled && cert?.selfSigned ? cert.fingerprint : null };
}

/** TLS on the node's listeners: one certificate for the ws port, the raw TCP inbound and the proxy. */
export function openNodeTls(opts: NodeRunOptions): Promise<TlsCertificates> {
  return TlsCertificates.open({
    mode: opts.tls?.mode ?? 'off',
    publicHost: isWildcard(opts.host) ? 'localhost' : opts.host,
    dataDir: opts.dataDir,
    certFile: opts.tls?.certFile,
    keyFile: opts.tls?.keyFile,
    watchIntervalMs: 2000,
    log: opts.log,
  });
}

/** Starts the data plane over the node's view and its http(s) server, then the relay listener. */
export async function startListeners(opts: NodeRunOptions, parts: { tls: TlsCertificates; view: NodeView; journal: CounterJournal; geo: NodeGeo }): Promise<NodeListeners> {
  const { tls, view, journal, geo } = parts;
  const dataPlane = createDataPlane({
    store: view,
    events: { publish: (e) => journal.event(e) },
    zones: { list: () => geo.zones },
    geo: { route: (country: string, city: string | undefined) => geo.route(country, city), routes: (country: string, city: string | undefined) => geo.routes(country, city) },
    log: opts.log,
    config: {
      host: opts.host,
      vlessTcpPort: opts.vlessTcpPort,
      proxyPort: opts.proxyPort,
      wsPath: NODE_WS_PATH,
      statsIntervalMs: 5000,
      heartbeatIntervalMs: 30_000,
      egress: opts.egress,
      egressAddresses: opts.egressAddresses,
      ...(tls.current ? { tls: tls.current } : {}),
    },
  });
  view.dataPlane = dataPlane;
  const http = await listenHttp(opts, tls, dataPlane);
  const started = await dataPlane.start();
  const address = http.address();
  const relay = await startRelay(opts, () => geo.entries);
  const ports: NodePorts = {
    vless_ws_port: typeof address === 'object' && address ? address.port : opts.port,
    vless_tcp_port: started.vlessTcpPort,
    proxy_port: started.proxyPort,
    ...(relay?.facts ?? {}),
    ...tlsFacts(tls),
  };
  // A certificate reloaded from its files, or made for the public host: new handshakes get it,
  // and the next report tells the control plane its pin (links follow).
  tls.onChange((pair) => {
    dataPlane.updateTls?.(pair);
    Object.assign(ports, tlsFacts(tls));
  });
  tls.watch();
  const close = async () => {
    await new Promise<void>((resolve) => http.close(() => resolve()));
    http.closeAllConnections();
    await relay?.server.shutdown();
    tls.close();
  };
  return { dataPlane, ports, relay: relay?.server ?? null, close };
}

/** The http(s) server of the VLESS WebSocket: upgrades go to the data plane, anything else is a 404. */
async function listenHttp(opts: NodeRunOptions, tls: TlsCertificates, dataPlane: DataPlane): Promise<Server> {
  const onRequest = (_req: unknown, res: ServerResponse) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'not_found', message: 'This is a data-plane node: only VLESS over WebSocket is served here.', details: {} } }));
  };
  const http: Server = tls.current ? createHttpsServer({ cert: tls.current.cert, key: tls.current.key, ALPNProtocols: LINK_ALPN }, onRequest) : createServer(onRequest);
  if (tls.current) {
    tls.attach(http as unknown as TlsServer);
    http.on('tlsClientError', () => { /* bad handshakes are dropped */ });
  }
  http.on('upgrade', (req, socket, head) => {
    if (!dataPlane.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(opts.port, opts.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  return http;
}

/** The geo relay listener, when the node has one; relay grants for it are keyed by the node token's hash. */
async function startRelay(opts: NodeRunOptions, entries: () => ReadonlySet<string>): Promise<{ server: ReturnType<typeof createRelayServer>; facts: { relay_port: number; relay_pcs: string } } | null> {
  if (opts.relayPort === undefined || opts.relayPort === null) return null;
  const tokenHash = hashToken(opts.token);
  const pair = await loadOrCreateSelfSigned(join(opts.dataDir, 'relay'), isWildcard(opts.host) ? 'localhost' : opts.host);
  const server = createRelayServer({ cert: pair.cert, key: pair.key, tokenHash, entries, egress: opts.egress, egressAddresses: opts.egressAddresses, log: opts.log });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.relayPort!, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address();
  return { server, facts: { relay_port: typeof a === 'object' && a ? a.port : opts.relayPort, relay_pcs: pinOf(new X509Certificate(pair.cert)) } };
}
