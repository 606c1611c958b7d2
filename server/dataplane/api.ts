// The seam between the control plane (HTTP API, store, events) and the data plane
// (VLESS relay, HTTP proxy, meters, limit enforcement). The data plane never imports
// fastify or electron: it gets everything it needs through DataPlaneDeps.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

export type SessionStatus = 'created' | 'active' | 'idle' | 'ended';
export type EventType = 'session_start' | 'session_heartbeat' | 'session_end' | 'session_stats';
export type LimitScope = 'global' | 'client' | 'session';

/** A session as stored. `connections` counts every connection the session has ever accepted. */
export interface SessionRow {
  id: string;
  customer_id: string;
  client_id: string;
  zone: string;
  reusable: boolean;
  paused: boolean;
  status: SessionStatus;
  uploaded_bytes: number;
  downloaded_bytes: number;
  duration: number;
  connections: number;
  created_at: string;
}

export interface LimitValues {
  downloaded_bytes?: number;
  uploaded_bytes?: number;
  download_speed?: number;
  upload_speed?: number;
  max_sessions?: number;
  max_reconnections?: number;
}

export interface RuntimePatch {
  status?: SessionStatus;
  uploaded_bytes?: number;
  downloaded_bytes?: number;
  duration?: number;
  connections?: number;
}

export interface ZoneInfo {
  code: string;
  name: string;
  country: string;
  cities: string[];
  nodes: string[];
  has_active_nodes: boolean;
}

export interface Logger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  debug(obj: object | string, msg?: string): void;
}

/** A session event before it is stored (the store gives it its id and time). */
export interface EventInput {
  customerId: string;
  sessionId: string;
  type: EventType;
  duration: number;
  uploaded_bytes: number;
  downloaded_bytes: number;
}

export interface DataPlaneDeps {
  store: {
    getSession(id: string): SessionRow | undefined;
    /** Persists live runtime fields of a session (one small transaction). */
    saveRuntime(id: string, patch: RuntimePatch): void;
    getLimits(customerId: string, scope: LimitScope): LimitValues | undefined;
    /** Persisted counter totals over a customer's sessions, or one client's sessions. */
    sumCounters(customerId: string, clientId?: string): { uploaded_bytes: number; downloaded_bytes: number };
  };
  events: {
    /** Persists the event, then fans it out to subscribers. */
    publish(e: EventInput): void;
  };
  zones: { list(): ZoneInfo[] };
  log: Logger;
  config: DataPlaneConfig;
}

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
  /** Extension (data plane): how long a VLESS header / proxy request head may take; default 5000. */
  headerTimeoutMs?: number;
  /** Extension (data plane): outbound connect timeout; default 10000. */
  connectTimeoutMs?: number;
}

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
  /** Flushes counters and closes every connection and listener. */
  close(): Promise<void>;
}
