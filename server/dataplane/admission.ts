// Whether a new connection may open for a session: a pure check over what the runtime knows
// (the stored row, the session's live state, the customer's limits and totals). It returns the
// refusal, or nothing when the connection may open; it changes nothing. The runtime acts on
// the answer (counting the connection, or ending a session found over its own byte cap).
import type { LimitValues, SessionRow } from '../domain.ts';
import { type Counters, overCap } from './meters.ts';

export type Refusal =
  | 'unknown'
  | 'ended'
  | 'paused'
  | 'not_reusable'
  | 'max_reconnections'
  | 'max_sessions'
  | 'too_many_connections'
  | 'connection_rate'
  | 'session_cap'
  // its expires_at has passed: the session ends
  | 'expired'
  | 'client_cap'
  | 'global_cap'
  // the session's client is disabled, or past its expires_at (clients extension)
  | 'client_disabled'
  | 'client_expired'
  // the store could not be read (disk error, locked database): refused, nothing counted
  | 'unavailable';

/** Refusals a flooding client causes by the thousand: the runtime logs them at most once per
 *  session per 10 s, the inbounds do not log them per connection. */
export function isFloodRefusal(reason: Refusal): boolean {
  return reason === 'connection_rate' || reason === 'too_many_connections';
}

/** What is known of the session before its customer's limits and totals are looked at. */
export interface SessionFacts {
  /** The data plane is closing: nothing is admitted any more. */
  closing: boolean;
  row: Pick<SessionRow, 'status' | 'paused'> | undefined;
  /** The live state, when the session has one in memory. */
  live?: { status: SessionRow['status']; capped: boolean };
}

/** The first check: the session exists, has not ended and is not paused. */
export function refusalOfSession(facts: SessionFacts): Refusal | undefined {
  if (facts.closing || !facts.row) return 'unknown';
  if (facts.row.status === 'ended' || facts.live?.status === 'ended' || facts.live?.capped) return 'ended';
  if (facts.row.paused) return 'paused';
  return undefined;
}

/** What the limits are checked against. */
export interface LimitFacts {
  reusable: boolean;
  /** Connections the session has ever accepted. */
  connections: number;
  /** Connections the session has open now. */
  openConnections: number;
  /** Sessions of the same client with at least one open connection. */
  activeSessionsOfClient: number;
  /** Most open connections a session may hold (the data plane's maxConnectionsPerSession). */
  maxOpenConnections?: number;
  limits: { global?: LimitValues; client?: LimitValues; session?: LimitValues };
  totals: { session: Counters; client: Counters; customer: Counters };
  /** A cluster node whose final grant for the client / the customer is spent (meters.grantSpent). */
  spent?: { client: boolean; customer: boolean };
}

/** The second check: reuse, reconnection and session-count limits, then the byte caps from
 *  the narrowest level (session) to the widest (global). */
export function refusalByLimits(facts: LimitFacts): Refusal | undefined {
  const { limits, totals } = facts;
  const clientLimits = limits.client;
  if (!facts.reusable && facts.connections >= 1) return 'not_reusable';
  if (facts.reusable && clientLimits?.max_reconnections != null && facts.connections >= 1 + clientLimits.max_reconnections) return 'max_reconnections';
  if (facts.maxOpenConnections !== undefined && facts.openConnections >= facts.maxOpenConnections) return 'too_many_connections';
  if (facts.openConnections === 0 && clientLimits?.max_sessions != null && facts.activeSessionsOfClient >= clientLimits.max_sessions) return 'max_sessions';
  if (overCap(limits.session, totals.session)) return 'session_cap';
  if (overCap(limits.client, totals.client) || facts.spent?.client) return 'client_cap';
  if (overCap(limits.global, totals.customer) || facts.spent?.customer) return 'global_cap';
  return undefined;
}
