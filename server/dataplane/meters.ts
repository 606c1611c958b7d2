// The in-memory meters of the runtime: byte totals and token buckets per customer, client and
// session, and the small rules that read limits against them. State only, no behaviour that
// reaches the store or the event bus.
import type { LimitValues, SessionStatus } from '../domain.ts';
import type { CloseReason } from './close-reason.ts';
import { TokenBucket } from './token-bucket.ts';

export type Dir = 'up' | 'down';

/** What the runtime needs from a live connection: a way to cut it. */
export interface ConnHandle {
  close(reason: CloseReason): void;
}

export interface Counters {
  up: number;
  down: number;
}

export interface Buckets {
  up: TokenBucket;
  down: TokenBucket;
}

/** The limits records of a customer, as last read from the store. */
export interface CustomerLimits {
  global?: LimitValues;
  client?: LimitValues;
  session?: LimitValues;
}

export interface CustomerState extends CapCounting {
  id: string;
  totals: Counters;
  buckets: Buckets;
  limits: CustomerLimits;
  clients: Map<string, ClientState>;
  sessions: Set<SessionState>;
  limitsReadAt: number;
}

export interface ClientState extends CapCounting {
  id: string;
  customer: CustomerState;
  totals: Counters;
  buckets: Buckets;
  /** Sessions of this client with at least one open connection. */
  active: Set<SessionState>;
}

export interface SessionState extends CapCounting {
  id: string;
  short: string;
  /** The session's zone (metrics label). */
  zone: string;
  /** When the session ends by itself (epoch ms, from its row's expires_at); 0: never. */
  expiresAt: number;
  reusable: boolean;
  customer: CustomerState;
  client: ClientState;
  status: SessionStatus;
  totals: Counters;
  buckets: Buckets;
  durationMs: number;
  openSince: number;
  /** Connections counted so far (dials that reached their destination). */
  connections: number;
  /** Connections relaying now. */
  open: Set<ConnHandle>;
  /** Connections admitted and still dialling: not counted yet, but they hold the session's place
   *  (a one-shot session admits one at a time; max_sessions sees the session as active). */
  pending: Set<ConnHandle>;
  /** Reached its own byte cap: ends when the last connection closes. */
  capped: boolean;
  /** Its last connection closed at lastClosedAt; it stays active until this time (the reconnection
   *  grace) and ends then unless a connection opens meanwhile. 0 when not lingering. */
  lingerUntil: number;
  lastClosedAt: number;
  /** New connections admitted per second (token bucket: tokens and when they were last topped up). */
  connTokens: number;
  connTokensAt: number;
  lastSaved: { up: number; down: number; duration: number; status: SessionStatus; connections: number };
  lastStats: Counters;
  lastStatsAt: number;
  lastHeartbeatAt: number;
}

export const idShort = (id: string) => id.slice(0, 8);
export const nowMs = () => performance.now();

/** The byte cap of one direction (Infinity when none). */
export function capOf(limits: LimitValues | undefined, dir: Dir): number {
  const value = dir === 'up' ? limits?.uploaded_bytes : limits?.downloaded_bytes;
  return value === undefined || value === null ? Infinity : value;
}

/** Whether the totals (minus the period's base, for periodic caps) reached a byte cap. */
export function overCap(limits: LimitValues | undefined, totals: Counters, base: Counters = ZERO): boolean {
  return totals.up - base.up >= capOf(limits, 'up') || totals.down - base.down >= capOf(limits, 'down');
}

const ZERO: Counters = { up: 0, down: 0 };

/** What the caps of an entity count from: its totals at its period's start (zero for lifetime caps). */
export interface CapCounting {
  capBase: Counters;
  /** The start (epoch ms) of the period capBase belongs to; -1: lifetime caps. */
  capPeriod: number;
}

export function makeBuckets(limits: LimitValues | undefined, now: number): Buckets {
  return { up: new TokenBucket(limits?.upload_speed ?? undefined, now), down: new TokenBucket(limits?.download_speed ?? undefined, now) };
}

export function setRates(buckets: Buckets, limits: LimitValues | undefined, now: number): void {
  buckets.up.setRate(limits?.upload_speed ?? undefined, now);
  buckets.down.setRate(limits?.download_speed ?? undefined, now);
}

/** Whether the session has a connection open or dialling. */
export function inUse(session: SessionState): boolean {
  return session.open.size > 0 || session.pending.size > 0;
}

/** Whole seconds a session has had at least one open connection, up to `now`. */
export function durationOf(session: SessionState, now: number): number {
  return Math.floor((session.durationMs + (session.openSince ? now - session.openSince : 0)) / 1000);
}
