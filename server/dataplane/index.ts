// The data plane: VLESS over WebSocket (on the API server, via handleUpgrade), VLESS over raw
// TCP (optionally TLS), and the geo-targeted HTTP proxy, all feeding one Runtime of meters,
// events and limits. Nothing here imports fastify or electron; see api.ts for the seam.
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { DataPlane, DataPlaneDeps } from './api.ts';
import { Runtime } from './runtime.ts';
import { socketSide, wsSide } from './sides.ts';
import { serveVless } from './vless.ts';
import { serveProxy, type ProxyContext } from './proxy.ts';
import { DEFAULT_EGRESS } from './egress.ts';
import { ExitSelector } from './exits.ts';
import type { Connection } from './relay.ts';
import { DEFAULT_DNS_TIMEOUT_MS, DEFAULT_KEEPALIVE_MS } from './outbound.ts';

export type { DataPlane, DataPlaneDeps, DataPlaneConfig } from './api.ts';

const DEFAULT_HEADER_TIMEOUT_MS = 5000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10000;
/** v2ray's own connIdle: a relayed connection with no byte either way for 5 minutes is closed. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
const DEFAULT_WS_PING_INTERVAL_MS = 30_000;

/** v2ray's ws early data arrives base64url-encoded in Sec-WebSocket-Protocol. */
function earlyData(req: IncomingMessage): { data: Buffer; protocol: string } | undefined {
  const p = req.headers['sec-websocket-protocol'];
  if (typeof p !== 'string' || p.length < 24 || p.includes(',') || !/^[A-Za-z0-9_-]+=*$/.test(p)) return undefined;
  const data = Buffer.from(p, 'base64url');
  return data.length >= 18 && data[0] === 0 ? { data, protocol: p } : undefined;
}

/** What the inbounds share: the runtime, the timeouts, the egress, the open connections' set. */
function inboundContext(deps: DataPlaneDeps, runtime: Runtime, open: Set<Connection>): ProxyContext {
  const cfg = deps.config;
  return {
    runtime,
    log: deps.log,
    egress: cfg.egress ?? DEFAULT_EGRESS,
    tls: !!cfg.tls,
    headerTimeoutMs: cfg.headerTimeoutMs ?? DEFAULT_HEADER_TIMEOUT_MS,
    connectTimeoutMs: cfg.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    dial: { lookup: cfg.dnsLookup, dnsTimeoutMs: cfg.dnsTimeoutMs ?? DEFAULT_DNS_TIMEOUT_MS, keepAliveMs: cfg.keepAliveMs ?? DEFAULT_KEEPALIVE_MS, localAddress: cfg.egressAddresses?.[0] },
    track: (c) => open.add(c),
    untrack: (c) => open.delete(c),
    zones: () => deps.zones.list(),
    sessionExists: (id) => {
      try {
        return deps.store.getSession(id) !== undefined;
      } catch {
        return true; // the store is failing: admit() refuses it ('unavailable') and logs once
      }
    },
    prepare: deps.store.prepare ? (id) => deps.store.prepare!(id) : undefined,
    ...(deps.geo ? { geo: deps.geo } : {}),
    exits: new ExitSelector({ idleMs: cfg.stickyIdleMs }),
    egressAddresses: cfg.egressAddresses ?? [],
  };
}

/**
 * One sweep over the open connections: close those idle for idleTimeoutMs, and ping the ws
 * clients every pingIntervalMs, cutting one that answered no ping and moved no byte since the
 * last (a slow reader still drains its backlog, so it is not cut while it reads).
 */
function startSweep(deps: DataPlaneDeps, open: Set<Connection>): NodeJS.Timeout {
  const cfg = deps.config;
  const idleTimeoutMs = cfg.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const pingIntervalMs = cfg.wsPingIntervalMs ?? DEFAULT_WS_PING_INTERVAL_MS;
  let lastPing = performance.now();
  const sweep = setInterval(() => {
    const now = performance.now();
    const pingDue = now - lastPing >= pingIntervalMs;
    for (const c of [...open]) {
      if (c.closed || !c.lease) continue; // header phase: the header deadline applies
      if (now - c.lastActive >= idleTimeoutMs) {
        deps.log.debug({ session: c.lease.session.short }, 'idle connection closed');
        c.close('idle_timeout');
      } else if (pingDue && c.client.ping) {
        const answered = c.client.ping();
        if (!answered && c.lastActive < lastPing) {
          deps.log.debug({ session: c.lease.session.short }, 'ws client answered no ping');
          c.close('ping_timeout');
        }
      }
    }
    if (pingDue) lastPing = now;
  }, Math.max(20, Math.min(1000, idleTimeoutMs / 4, pingIntervalMs / 4)));
  sweep.unref();
  return sweep;
}

/** The TCP (or TLS) listeners of the inbounds: made, listening, their certificate replaced. */
class Listeners {
  readonly servers: Server[] = [];
  readonly tlsServers: TlsServer[] = [];
  /** Every TCP socket the listeners accepted and that is not closed yet (a TLS handshake or a half-closed one included). */
  readonly accepted = new Set<Socket>();
  private readonly deps: DataPlaneDeps;
  private readonly handshakeTimeout: number;

  constructor(deps: DataPlaneDeps, handshakeTimeout: number) {
    this.deps = deps;
    this.handshakeTimeout = handshakeTimeout;
  }

  /** A listener on `port` (0: any) whose sockets go to `onSocket`; resolves to its port. */
  listen(port: number, onSocket: (s: Socket) => void): Promise<number> {
    const server = this.make(onSocket);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.deps.config.host, () => {
        server.removeListener('error', reject);
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : port);
      });
    });
  }

  private make(onSocket: (s: Socket) => void): Server {
    const cfg = this.deps.config;
    const opts = { allowHalfOpen: true, noDelay: true };
    let server: Server;
    if (cfg.tls) {
      const tlsServer = createTlsServer({ ...opts, cert: cfg.tls.cert, key: cfg.tls.key, handshakeTimeout: this.handshakeTimeout }, onSocket);
      this.tlsServers.push(tlsServer);
      server = tlsServer;
    } else {
      server = createTcpServer(opts, onSocket);
    }
    server.on('error', (err) => this.deps.log.error({ err: String(err) }, 'data plane listener error'));
    server.on('connection', (sock: Socket) => {
      this.accepted.add(sock);
      sock.once('close', () => this.accepted.delete(sock));
    });
    if (cfg.tls) server.on('tlsClientError', () => { /* bad handshakes are dropped */ });
    this.servers.push(server);
    return server;
  }
}

function vlessWsServer(): WebSocketServer {
  return new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 1 << 20,
    handleProtocols: (protocols) => {
      // Echo an early-data "protocol" back, as v2ray expects.
      const [first] = protocols;
      return first ?? false;
    },
  });
}

/** Takes a WebSocket upgrade on the VLESS path (false: not its path); after close, destroys it. */
function vlessUpgrade(ctx: ProxyContext, wsPath: string, wss: WebSocketServer, rawSockets: Set<Duplex>, keepAlive: (sock: Duplex) => void) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer, closed: boolean): boolean => {
    let path: string;
    try {
      path = new URL(req.url ?? '/', 'http://x').pathname;
    } catch {
      return false;
    }
    if (path !== wsPath) return false;
    if (closed) {
      socket.destroy();
      return true;
    }
    socket.on('error', () => {});
    keepAlive(socket);
    rawSockets.add(socket);
    socket.once('close', () => rawSockets.delete(socket));
    const early = earlyData(req);
    if (!early) delete req.headers['sec-websocket-protocol'];
    wss.handleUpgrade(req, socket, head, (ws) => {
      const remote = (socket as Socket).remoteAddress ?? '?';
      serveVless(ctx, wsSide(ws, remote, socket), 'ws', early?.data);
    });
    return true;
  };
}

export function createDataPlane(deps: DataPlaneDeps): DataPlane {
  const cfg = deps.config;
  const runtime = new Runtime(deps);
  const open = new Set<Connection>();
  const rawSockets = new Set<Duplex>();
  const ctx = inboundContext(deps, runtime, open);
  const wss = vlessWsServer();
  const listeners = new Listeners(deps, ctx.headerTimeoutMs);
  let closed = false;
  const keepAliveMs = cfg.keepAliveMs ?? DEFAULT_KEEPALIVE_MS;
  /** TCP keep-alive on a client socket; a TLS socket's own TCP socket (`_parent`) gets it too. */
  const keepAlive = (sock: Duplex) => {
    for (const s of [sock, (sock as { _parent?: Duplex })._parent]) (s as Socket | undefined)?.setKeepAlive?.(true, keepAliveMs);
  };
  const sweep = startSweep(deps, open);
  const upgrade = vlessUpgrade(ctx, cfg.wsPath, wss, rawSockets, keepAlive);
  /** An inbound's socket: errors ignored (the close path handles them), kept alive, served. */
  const inbound = (serve: (sock: Socket) => void) => (sock: Socket) => {
    sock.on('error', () => {});
    keepAlive(sock);
    serve(sock);
  };

  return {
    async start() {
      runtime.start();
      let vlessTcpPort: number | null = null;
      let proxyPort: number | null = null;
      if (cfg.vlessTcpPort !== null && cfg.vlessTcpPort !== undefined) {
        vlessTcpPort = await listeners.listen(cfg.vlessTcpPort, inbound((sock) => serveVless(ctx, socketSide(sock), 'tcp')));
      }
      if (cfg.proxyPort !== null && cfg.proxyPort !== undefined) {
        proxyPort = await listeners.listen(cfg.proxyPort, inbound((sock) => serveProxy(ctx, socketSide(sock))));
      }
      return { vlessTcpPort, proxyPort };
    },

    handleUpgrade: (req, socket, head) => upgrade(req, socket, head, closed),

    updateTls(tls) {
      for (const s of listeners.tlsServers) s.setSecureContext({ cert: tls.cert, key: tls.key });
    },

    live: (id) => runtime.live(id),
    connectionsOf: (id) => runtime.connectionsOf(id),
    refusalsOf: (q) => ('sessionId' in q ? runtime.refusals.ofSession(q.sessionId) : runtime.refusals.ofClient(q.customerId, q.clientId)),
    runtimeSize: () => runtime.size(),
    setClusterShare: (customerId, clientId, share) => runtime.setClusterShare(customerId, clientId, share),
    openByZone: () => runtime.openByZone(),
    pause: (id) => runtime.pause(id),
    limitsChanged: (customerId) => runtime.limitsChanged(customerId),

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(sweep);
      const done = listeners.servers.map((s) => new Promise<void>((r) => s.close(() => r())));
      runtime.shutdown();
      for (const c of [...open]) c.close('shutdown');
      for (const s of rawSockets) s.destroy();
      // What no connection holds (a TLS handshake under way, a socket its peer half-closed) would
      // keep the listeners from closing: gone too.
      for (const s of listeners.accepted) s.destroy();
      wss.close();
      await Promise.all(done);
    },
  };
}
