// Wire shapes of the v2 API, as the renderer (and the preload contract) sees them.
// They come from the server's schemas (type-only imports: nothing runtime crosses over).
// The limits record is spelled out here because the schema's generic `recordOf` helper
// erases the optional fields from its static type.
export type {
  Zone,
  ZoneList,
  Session,
  SessionList,
  SessionStatusResponse,
  SessionStatusValue,
  SessionCreateRequest,
  PauseResult,
  SessionEvent,
  EventType,
  ServerInfo,
  Configuration,
  LimitScope,
} from '../../../server/contract/schemas.ts';

import type { SessionStatusValue, EventType } from '../../../server/contract/schemas.ts';

export interface LimitValues {
  downloaded_bytes?: number;
  uploaded_bytes?: number;
  download_speed?: number;
  upload_speed?: number;
  max_sessions?: number;
  max_reconnections?: number;
}
export type LimitField = keyof LimitValues;
export interface LimitsRecord extends LimitValues {
  id: string;
  created_at: string;
  updated_at: string;
}
/** PATCH body: a field set to null is removed. */
export type LimitsUpdate = { [K in LimitField]?: number | null };

export interface SessionListQuery {
  client_id?: string;
  status?: SessionStatusValue;
  zone?: string;
  limit?: number;
  cursor?: string;
}

export interface EventFilter {
  session_id?: string[];
  event_type?: EventType[];
  /** Replay every stored event with a larger id first; omit for live only. */
  last_event_id?: number;
}

/** The error record's content, plus the HTTP status (0 when the server could not be reached). */
export interface ApiErrorInfo {
  status: number;
  code: string;
  message: string;
  details: Record<string, unknown>;
  /** Seconds to wait, from Retry-After on 429. */
  retryAfter?: number;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: ApiErrorInfo };

export type StreamState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** Where the app's API lives. In Electron: the embedded server or a remote one. */
export interface ConnectionInfo {
  mode: 'embedded' | 'remote' | 'web';
  baseUrl: string;
  /** Whether a token is configured (the token itself never reaches the renderer in Electron). */
  hasToken: boolean;
  /** Electron: the folder with the embedded server's database. */
  dataDir?: string;
  /** Electron: how the token is kept ("safeStorage" or "file (0600)"). */
  tokenStorage?: string;
}

export interface ConnectionSettings {
  mode: 'embedded' | 'remote';
  remoteBaseUrl?: string;
  /** Only sent when changed; main keeps it encrypted. */
  remoteToken?: string;
}
