// The server's domain types: sessions, limits, events, zones and the logger, as every layer
// sees them. This module imports nothing of ours, so the store, the services, the routes and
// the data plane can all depend on it without depending on each other.
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
  /** Extension: when the session ends by itself (ISO time), or null. */
  expires_at: string | null;
}

export interface LimitValues {
  /** When the byte caps renew (none: they count the lifetime); see server/contract/period.ts. */
  reset_period?: 'none' | 'day' | 'week' | 'month' | 'rolling_30d';
  /** Where fixed periods start counting from (ISO time). */
  reset_anchor?: string;
  /** Session scope only: the lifetime a new session gets when it names no expires_at. */
  default_lifetime_seconds?: number;
  downloaded_bytes?: number;
  uploaded_bytes?: number;
  download_speed?: number;
  upload_speed?: number;
  max_sessions?: number;
  max_reconnections?: number;
  /** Client scope only: devices that may fetch the subscription feed (0: no limit). The data plane ignores it. */
  max_devices?: number;
}

/**
 * Extension (clients): what the owner set for one client, as the data planes enforce it: disabled,
 * its expiry, its override of the client limits template (fields replacing the template's), and
 * its last usage reset (epoch ms, and its lifetime totals then: its caps count from there).
 */
export interface ClientControl {
  disabled: boolean;
  expires_at: string | null;
  limits: LimitValues;
  reset: { at: number; up: number; down: number } | null;
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

/** A session event as both stores insert it: the event with its time, before it has an id. */
export interface EventInsert {
  customer_id: string;
  session_id: string;
  event_type: EventType;
  created_at: string;
  duration: number;
  downloaded_bytes: number;
  uploaded_bytes: number;
}

/** The row to insert for an event that happens at `createdAt`. */
export function eventInsert(input: EventInput, createdAt: string): EventInsert {
  return {
    customer_id: input.customerId,
    session_id: input.sessionId,
    event_type: input.type,
    created_at: createdAt,
    duration: input.duration,
    uploaded_bytes: input.uploaded_bytes,
    downloaded_bytes: input.downloaded_bytes,
  };
}
