// The options a caller gives buildServer, and the settings resolved from them with every
// default filled in: link settings (what session configurations say), the service settings
// the routes read, the data plane's configuration, the rate limit and event retention.
import type { WebhookOptions } from '../webhooks/service.ts';
import type { DataPlane, DataPlaneConfig, DataPlaneDeps } from '../dataplane/api.ts';
import type { Logger } from '../domain.ts';
import type { SseOptions } from '../events/sse.ts';
import type { LinkSettings } from '../links.ts';
import type { UsageHistoryOptions } from '../usage/history.ts';
import { applyTlsToLink, type ServerTlsOptions, type TlsCertificates, type TlsStatus } from '../tls/index.ts';

export interface ServerOptions extends ServerTlsOptions {
  dataDir: string;
  /**
   * postgres://USER:PASS@HOST:PORT/DB: the control plane on PostgreSQL (several `serve`
   * processes may share it); absent: the embedded SQLite store in `dataDir` (the default).
   */
  database?: string;
  /**
   * PostgreSQL only: answer the hot reads (status, creation checks, limits, a client's record)
   * from this instance's cache behind a fence (store/pg/read-cache.ts). Default on.
   */
  readCache?: boolean;
  zonesFile?: string;
  /** Requests per token in a fixed window. Default 600 per 60 s. */
  rateLimit?: { max: number; windowMs: number };
  /** Host name or address written into session configurations. Default 127.0.0.1. */
  publicHost?: string;
  /** Port written into ws configurations until the server listens (then the real port). */
  publicPort?: number;
  /** Network of the configuration handed out: `ws` on the API port (default) or raw `tcp`. */
  linkNetwork?: 'ws' | 'tcp';
  wsPath?: string;
  // TLS on the API port (and so on VLESS over ws), the TCP inbound and the proxy: ServerTlsOptions
  // (server/tls/index.ts): `tlsMode` auto|on|off (default auto), `tlsCertFile`/`tlsKeyFile`
  // (watched and reloaded), `tls` PEM text, `acme`, else a self-signed certificate.
  /** Bind address of the data-plane listeners (the API's own is chosen at listen). */
  host?: string;
  vlessTcpPort?: number | null;
  proxyPort?: number | null;
  statsIntervalMs?: number;
  heartbeatIntervalMs?: number;
  /** Egress policy of the data plane; default 'public-only' (see server/dataplane/egress.ts). */
  egress?: 'public-only' | 'lan' | 'allow-all';
  /** Source addresses of the data plane's outbound connections (`--egress-address A,B`); default any. */
  egressAddresses?: string[];
  /** Webhooks: `false` turns them off (no routes, no sender); an object tunes the sender
   *  (server/webhooks/service.ts WebhookOptions). Default: on. */
  webhooks?: false | WebhookOptions;
  /** Connection hardening of the data plane: idle timeout, ws pings, keep-alive,
   *  connections per session, connection rate, reconnection grace, DNS timeout. Defaults in dataplane/. */
  connectionLimits?: ConnectionLimits;
  sse?: Partial<SseOptions>;
  /** Days events are kept (at least 7). */
  eventRetentionDays?: number;
  logger?: Logger;
  /** One readable log line per request. */
  logRequests?: boolean;
  /**
   * Extension (metrics): the bearer token GET /metrics asks for. Unset: /metrics answers only
   * clients on this machine (loopback), without a token.
   */
  metricsToken?: string;
  /**
   * Reverse proxies whose X-Forwarded-For names the client (request.ip: the subscription
   * miss limiter): addresses, CIDRs or `loopback`/`linklocal`/`uniquelocal`. Unset or empty:
   * the socket peer is the client and forwarding headers are ignored. GET /metrics never
   * trusts them (server/http/metrics.ts).
   */
  trustProxy?: string[];
  /** How long a client may take over its headers, its whole request, and between requests. */
  httpTimeouts?: Partial<HttpTimeouts>;
  /** Folder of the built renderer, served at `/`. */
  rendererDir?: string;
  /**
   * Usage history (server/usage/history.ts): on by default; `false` records nothing
   * (GET /v2/usage then answers empty buckets); an object sets its clock and intervals (tests).
   */
  usageHistory?: boolean | UsageHistoryOptions;
  /** How often touched sessions' usage thresholds are checked (ms); default 1000 (tests set less). */
  thresholdsEveryMs?: number;
  /** Replaces the data plane (tests of the control plane alone pass `null`). */
  dataPlane?: ((deps: DataPlaneDeps) => DataPlane) | null;
}

/**
 * Timeouts of the API port against slow or idle clients (a slow-loris holds a connection by
 * sending a byte now and then). Node checks the headers and request deadlines every
 * `checkIntervalMs`, so a client is cut at most that much after its deadline. None applies to
 * a response being written (an event stream lasts as long as it likes; its keep-alive comments
 * keep the socket from being idle) nor to an upgraded socket (ws turns the socket timeout off).
 */
export interface HttpTimeouts {
  /** From the connection (or the previous request) to the end of the request headers. */
  headersMs: number;
  /** From the connection (or the previous request) to the end of the whole request, body included. */
  requestMs: number;
  /** An idle keep-alive connection between two requests. */
  keepAliveMs: number;
  /** A connection with no byte in either direction (a reader that stopped reading), at any time. */
  idleMs: number;
  /** How often Node checks the headers and request deadlines. */
  checkIntervalMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 65_000, idleMs: 120_000, checkIntervalMs: 5000 };

export type ConnectionLimits = Pick<DataPlaneConfig, 'idleTimeoutMs' | 'wsPingIntervalMs' | 'keepAliveMs' | 'maxConnectionsPerSession' | 'dnsTimeoutMs' | 'connectionRatePerSecond' | 'connectionBurst' | 'reconnectGraceMs' | 'stickyIdleMs'>;

/** The service settings the routes read (services.settings). */
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

export interface ResolvedConfig {
  settings: Settings;
  dataPlane: DataPlaneConfig;
  rateLimit: { max: number; windowMs: number };
  /** How long events are kept, in ms. */
  eventRetentionMs: number;
  httpTimeouts: HttpTimeouts;
}

/** `version` is the app's own (package.json), read by app.ts; `tls` is the opened certificate (server/tls). */
export function resolveConfig(opts: ServerOptions, version: string, tls: TlsCertificates): ResolvedConfig {
  const link: LinkSettings = {
    publicHost: opts.publicHost ?? '127.0.0.1',
    network: opts.linkNetwork ?? 'ws',
    wsPort: opts.publicPort ?? 8787,
    tcpPort: null,
    wsPath: opts.wsPath ?? '/vless',
    tls: false,
  };
  applyTlsToLink(link, tls);
  return {
    settings: {
      version,
      link,
      tls: tls.status,
      proxyPort: null,
      logRequests: Boolean(opts.logRequests),
      sse: { retryMs: 3000, keepAliveMs: 15_000, maxBufferedBytes: 1024 * 1024, replayBatch: 500, ...opts.sse },
    },
    dataPlane: {
      host: opts.host ?? '127.0.0.1',
      vlessTcpPort: opts.vlessTcpPort === undefined ? 0 : opts.vlessTcpPort,
      proxyPort: opts.proxyPort === undefined ? 0 : opts.proxyPort,
      wsPath: link.wsPath,
      tls: tls.current,
      statsIntervalMs: opts.statsIntervalMs ?? 5000,
      heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 30_000,
      egress: opts.egress ?? 'public-only',
      ...(opts.egressAddresses?.length ? { egressAddresses: opts.egressAddresses } : {}),
      ...opts.connectionLimits,
    },
    rateLimit: opts.rateLimit ?? { max: 600, windowMs: 60_000 },
    eventRetentionMs: Math.max(7, opts.eventRetentionDays ?? 14) * 86_400_000,
    httpTimeouts: resolveHttpTimeouts(opts.httpTimeouts),
  };
}

function resolveHttpTimeouts(given: Partial<HttpTimeouts> | undefined): HttpTimeouts {
  const t = { ...DEFAULT_HTTP_TIMEOUTS, ...given };
  for (const [name, ms] of Object.entries(t)) {
    if (!Number.isInteger(ms) || ms < 1) throw new Error(`httpTimeouts.${name} must be a whole number of milliseconds above 0, not ${ms}`);
  }
  // Node refuses a headers deadline beyond the request deadline.
  if (t.headersMs > t.requestMs) throw new Error(`httpTimeouts.headersMs (${t.headersMs}) cannot exceed requestMs (${t.requestMs})`);
  return t;
}
