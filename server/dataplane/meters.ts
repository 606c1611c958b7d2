// The in-memory meters of the runtime: byte totals and token buckets per customer, client and
// session, and the small rules that read limits against them. State only, no behaviour that
// reaches the store or the event bus.
import type { ClientControl, LimitValues, SessionStatus } from '../domain.ts';
import type { CloseReason } from './close-reason.ts';
import { TokenBucket } from './token-bucket.ts';
import type { ConnectionView } from './support.ts';

export type Dir = 'up' | 'down';

/** What the runtime needs from a live connection: a way to cut it. */
/**
 * A session is saved (its counters handed to the store, or to the journal of a node or cluster
 * instance) whenever this many bytes moved since its last save, besides every 500 ms: so a
 * kill -9 of the process loses at most this much of what it counted per session, whatever the
 * speed (see cluster/journal.ts for the whole bound).
 */
export const SAVE_BYTES = 512 * 1024;

export interface ConnHandle {
  close(reason: CloseReason): void;
  /** What support sees of it while it relays (dataplane/support.ts); undefined before that. */
  view?(): ConnectionView | undefined;
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

/**
 * A data-plane node's part of a customer's or one client's limits across the cluster (set
 * through DataPlane.setClusterShare, server/store/grants.ts). Outside a cluster: no limit.
 */
export interface ClusterShare {
  /** Bytes this runtime may still move (its grant, counted down by every byte); Infinity: no cap. */
  allow: Counters;
  /** No more grant will come in that direction: a spent grant is the cap itself (cut, refuse). */
  allowFinal: { up: boolean; down: boolean };
  /** The part of the speed limits applied here (1: all; 0.5 when two nodes carry the traffic). */
  rateShare: number;
}

export const NO_SHARE = (): ClusterShare => ({ allow: { up: Infinity, down: Infinity }, allowFinal: { up: false, down: false }, rateShare: 1 });

/** A spent final grant: the entity is at its cap as far as this runtime may know. */
export function grantSpent(e: ClusterShare): boolean {
  return (e.allowFinal.up && e.allow.up <= 0) || (e.allowFinal.down && e.allow.down <= 0);
}

export interface CustomerState extends CapCounting, ClusterShare {
  id: string;
  totals: Counters;
  buckets: Buckets;
  limits: CustomerLimits;
  clients: Map<string, ClientState>;
  sessions: Set<SessionState>;
  limitsReadAt: number;
}

export interface ClientState extends CapCounting, ClusterShare {
  id: string;
  customer: CustomerState;
  totals: Counters;
  buckets: Buckets;
  /** Sessions of this client with at least one open connection. */
  active: Set<SessionState>;
  /** The client limits in force: its override (control.limits) over the customer's template. */
  limits: LimitValues | undefined;
  /** What the owner set for the client (disabled, expiry, override, usage reset); undefined: nothing. */
  control: ClientControl | undefined;
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

/** A speed limit times this runtime's share of it (cluster nodes), or undefined. */
const rateOf = (v: number | null | undefined, share: number): number | undefined => (v === undefined || v === null ? undefined : Math.max(1, Math.floor(v * share)));

export function makeBuckets(limits: LimitValues | undefined, now: number, share = 1): Buckets {
  return { up: new TokenBucket(rateOf(limits?.upload_speed, share), now), down: new TokenBucket(rateOf(limits?.download_speed, share), now) };
}

export function setRates(buckets: Buckets, limits: LimitValues | undefined, now: number, share = 1): void {
  buckets.up.setRate(rateOf(limits?.upload_speed, share), now);
  buckets.down.setRate(rateOf(limits?.download_speed, share), now);
}

/** Whether the session has a connection open or dialling. */
export function inUse(session: SessionState): boolean {
  return session.open.size > 0 || session.pending.size > 0;
}

/** Whole seconds a session has had at least one open connection, up to `now`. */
export function durationOf(session: SessionState, now: number): number {
  return Math.floor((session.durationMs + (session.openSince ? now - session.openSince : 0)) / 1000);
}
