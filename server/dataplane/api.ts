// The seam between the control plane (HTTP API, store, events) and the data plane
// (VLESS relay, HTTP proxy, meters, limit enforcement). The data plane never imports
// fastify or electron: it gets everything it needs through DataPlaneDeps.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ConnectionView, RefusalDigest } from './support.ts';
import type { ClientControl, EventInput, LimitScope, LimitValues, Logger, RuntimePatch, SessionRow, SessionStatus, ZoneInfo } from '../domain.ts';

export interface DataPlaneDeps {
  store: {
    getSession(id: string): SessionRow | undefined;
    /** Persists live runtime fields of a session (one small transaction). */
    saveRuntime(id: string, patch: RuntimePatch): void;
    getLimits(customerId: string, scope: LimitScope): LimitValues | undefined;
    /** Persisted counter totals over a customer's sessions, or one client's sessions. */
    sumCounters(customerId: string, clientId?: string): { uploaded_bytes: number; downloaded_bytes: number };
    /**
     * Optional: a store that is a local view of a remote database (PostgreSQL) loads what the
     * calls above read for this session before a connection is admitted; null when nothing
     * needs loading. The SQLite store has none and admission stays synchronous.
     */
    prepare?(sessionId: string): Promise<void> | null;
    /**
     * Optional (periodic caps): an entity's lifetime totals at the start of the period
     * its caps count in (the customer for `global`, a client id, a session id), as the control
     * plane recorded them; undefined when none is recorded (the runtime then counts from its
     * totals now). Without it, periodic caps count from when the runtime first saw the entity.
     */
    quotaBase?(customerId: string, scope: LimitScope, entityId: string, periodStart: number): { up: number; down: number } | undefined;
    /**
     * Optional (clients): what the owner set for one client (disabled, expiry, its override of the
     * client limits template, its last usage reset); undefined: nothing, the template alone.
     */
    getClientControl?(customerId: string, clientId: string): ClientControl | undefined;
    /**
     * Optional (cluster nodes): a refusal the control plane decided for this session's
     * first connection (central max_sessions, asked for in prepare()); undefined: admit as usual.
     */
    clusterRefusal?(sessionId: string): 'max_sessions' | undefined;
  };
  events: {
    /** Persists the event, then fans it out to subscribers. */
    publish(e: EventInput): void;
  };
  zones: { list(): ZoneInfo[] };
  log: Logger;
  config: DataPlaneConfig;
  /**
   * Optional (cluster): where a proxy request targeting a country (and city) leaves:
   * a GeoRoute, or null when no node is up there (412). Without it, every country and city of
   * the catalogue leaves from here.
   */
  geo?: {
    route(country: string, city: string | undefined): GeoRoute | null;
    /** Every up route of the place (here and each relay node): the proxy's exits (exits.ts); absent: route() alone. */
    routes?(country: string, city: string | undefined): GeoRoute[];
  };
  /**
   * Optional (usage history): told, after each successful counter save, the bytes that
   * save added. Must be cheap and never throw (it only adds to memory; the writer batches).
   */
  usage?: { add(sessionId: string, up: number, down: number): void };
  /**
   * Optional (metrics): told of each refused admission (its reason) and, after each
   * successful counter save, the bytes that save added with the session's zone. Cheap, never throws.
   */
  observe?: {
    refused(reason: string): void;
    moved(zone: string, up: number, down: number): void;
    /** A session's connections were cut by a byte cap, or it expired (webhooks: cap_reached, expired); at most once a minute per session and reason. */
    capped?(customerId: string, sessionId: string, reason: 'session_cap' | 'client_cap' | 'global_cap' | 'expired'): void;
  };
}

/**
 * Where a geo-targeted proxy request leaves the cluster: from this data plane, or
 * through another node's relay listener (TLS, its certificate pinned by `pcs`; `key` is the
 * control plane's short-lived relay key for `from`, expiring at `exp`, from which each
 * connection's single-use grant is made: relay-grant.ts).
 */
/** `slot` (relay): which of the exit node's source addresses to leave from (slot modulo their count; none: its rotation). */
export type GeoRoute = { via: 'here' } | { via: 'relay'; node: string; host: string; port: number; pcs: string; from: string; exp: number; key: string; slot?: number };

export interface DataPlaneConfig {
  /** Address to bind the raw-TCP VLESS inbound and the proxy to. */
  host: string;
  /** Raw TCP VLESS port; 0 picks a free port; null disables it. */
  vlessTcpPort: number | null;
  /** HTTP proxy port; 0 picks a free port; null disables it. */
  proxyPort: number | null;
  /** WebSocket path on the API port. */
  wsPath: string;
  /** Optional TLS material (PEM) for the TCP inbound and the proxy. */
  tls?: { cert: string; key: string };
  statsIntervalMs: number;
  heartbeatIntervalMs: number;
  /**
   * 'public-only' (the default: refuses loopback, link-local, private and other non-global
   * destinations), 'lan' (also private ranges, never loopback or link-local) or 'allow-all'.
   */
  egress?: 'public-only' | 'lan' | 'allow-all';
  /**
   * Local addresses outbound TCP connections leave from (`--egress-address A,B` of `node run` and
   * `serve`); default any. VLESS leaves from the first; the proxy's exits rotate over all (exits.ts).
   */
  egressAddresses?: string[];
  /** Extension (data plane): how long a VLESS header / proxy request head may take; default 5000. */
  headerTimeoutMs?: number;
  /** Extension (data plane): outbound connect timeout; default 10000. */
  connectTimeoutMs?: number;
  /** A relayed connection with no byte either way for this long is closed; default 300000 (v2ray's connIdle). */
  idleTimeoutMs?: number;
  /** WebSocket ping interval; a client that answered no ping and moved no byte within one interval is cut. Default 30000. */
  wsPingIntervalMs?: number;
  /** TCP keep-alive (initial delay) on client and destination sockets; default 30000. */
  keepAliveMs?: number;
  /** Open (or dialling) connections one session may hold; over it a new one is refused. Default 64. */
  maxConnectionsPerSession?: number;
  /** New connections a session may open per second (sustained); over it they are refused. Default 50. */
  connectionRatePerSecond?: number;
  /** Burst of new connections above the rate (a page load through the proxy). Default 100. */
  connectionBurst?: number;
  /** A session whose last connection closed stays active this long: a reconnection within it
   *  publishes no session_end/session_start pair. Default 2000; 0 ends at once. */
  reconnectGraceMs?: number;
  /** A proxy sticky session (`sessid`) with no new connection for this long ends; default 60000. */
  stickyIdleMs?: number;
  /** Extension (data plane): how long resolving a destination name may take; default 5000. */
  dnsTimeoutMs?: number;
  /** Extension (data plane): resolves destination names; default node's dns.lookup (the system resolver). */
  dnsLookup?: DnsLookup;
}

/** Resolves a host name to one address. */
export type DnsLookup = (hostname: string) => Promise<{ address: string; family: number }>;

export interface LiveCounters {
  status: SessionStatus;
  uploaded_bytes: number;
  downloaded_bytes: number;
  duration: number;
  open_connections: number;
}

export interface DataPlane {
  /** Starts the TCP inbound and the proxy; resolves with the bound ports. */
  start(): Promise<{ vlessTcpPort: number | null; proxyPort: number | null }>;
  /** Handles an HTTP upgrade on the API server; returns false when the path is not ours. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Live counters of a session with runtime state, undefined when it has none in memory. */
  live(sessionId: string): LiveCounters | undefined;
  /** Closes every open connection of the session (the pause flag is already stored). */
  pause(sessionId: string): void;
  /** A limits record of this customer changed: re-read limits and apply them to live connections. */
  limitsChanged(customerId: string): void;
  /** A new certificate for the TLS listeners: used by new handshakes, open connections keep theirs. */
  updateTls?(tls: { cert: string; key: string }): void;
  /**
   * Cluster nodes: this node's share of a customer's limits (clientId null) or a
   * client's: bytes its grant still lets it move past what it has saved (`left`, Infinity: no cap),
   * whether a spent grant is the cap (`final`), its part of the speed limits (`rateShare`). null: none.
   */
  setClusterShare?(customerId: string, clientId: string | null, share: { left: { up: number; down: number }; final: { up: boolean; down: boolean }; rateShare: number } | null): void;
  /** How many customers, clients and sessions the runtime holds in memory (diagnostics, tests). */
  runtimeSize?(): { customers: number; clients: number; sessions: number };
  /** Flushes counters and closes every connection and listener. */
  close(): Promise<void>;
  /** Connections relaying now, per zone of their sessions (metrics). */
  openByZone?(): Array<{ zone: string; count: number }>;
  /** Support: the session's connections relaying now (bounded by the per-session connection cap). */
  connectionsOf?(sessionId: string): ConnectionView[];
  /** Support: the recent refusals of a session or of a customer's client, and their counts over the last hour. */
  refusalsOf?(q: { sessionId: string } | { customerId: string; clientId: string }): RefusalDigest;
}

export type { ConnectionView, RefusalDigest, RefusalView, Transport } from './support.ts';
