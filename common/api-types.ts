// Wire shapes of the v2 API as the desktop app sees them (main, preload and renderer alike).
// They come from the server's schemas (type-only imports: nothing runtime crosses over).
// Neutral ground: no Node and no DOM, so both tsconfigs check it.
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
} from '../server/contract/schemas.ts';
export type { Subscription, SubscriptionFormat, SubscriptionSettings, SubscriptionSettingsUpdate } from '../server/contract/subscriptions.ts';
export type { AuditPage, AuditQuery } from '../server/contract/audit.ts';
// Usage history (extension): GET /v2/usage.
export type { UsageQuery, UsageReport, UsageStepValue } from '../server/contract/usage.ts';
// The doctor report (GET /v2/doctor).
export type { DoctorReport } from '../server/contract/doctor.ts';
// Support: a session's live connections, a session's or client's recent refusals.
export type { ConnectionList, RefusalList } from '../server/contract/support.ts';
// Webhooks.
export type { Webhook, WebhookCreate, WebhookDelivery, WebhookEventKind, WebhookTestResult } from '../server/contract/webhooks.ts';

import type { ClientLimits, ClientLimitsUpdate, SessionStatusValue, EventType } from '../server/contract/schemas.ts';

/** The client record has every limit field; the other two scopes have a subset of them. */
export type LimitsRecord = ClientLimits;
export type LimitValues = Omit<ClientLimits, 'id' | 'created_at' | 'updated_at'>;
/** The amounts of a limits record (its reset period and anchor are not amounts). */
export type LimitField = Exclude<keyof LimitValues, 'reset_period' | 'reset_anchor'>;
export type ResetPeriod = NonNullable<LimitValues['reset_period']>;
/** PATCH body: a field set to null is removed. */
export type LimitsUpdate = ClientLimitsUpdate;

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
  /** Electron: the stored token could not be read (what happened and what to do); hasToken is false. */
  tokenProblem?: string;
}

export interface ConnectionSettings {
  mode: 'embedded' | 'remote';
  remoteBaseUrl?: string;
  /** Only sent when changed; main keeps it encrypted. Required again when remoteBaseUrl changes. */
  remoteToken?: string;
  /** The user confirmed sending the token over plain http to a machine other than this one. */
  allowPlainHttp?: boolean;
}

/** Events a first connection of the event stream replays (the newest ones); later ones resume by id. */
export const HISTORY_TAIL = 200;

/** One address of this machine's network interfaces (desktop: "Let other devices connect"). */
export interface LanAddress {
  address: string;
  family: 4 | 6;
  /** The interface's name (eth0, en0, Wi-Fi...). */
  interface: string;
  /** A private IPv4 address (RFC 1918): what phones on the same network reach. */
  lan: boolean;
}

/** Whether the embedded server lets other devices connect, and on which address. */
export interface LanSharing {
  /** False in web mode and when the app uses a remote server. */
  supported: boolean;
  /** Why it is not supported, in words (when `supported` is false). */
  reason?: string;
  enabled: boolean;
  /** The address the data plane and the API are bound to while enabled. */
  address: string | null;
  /** Non-internal addresses of this machine, in interface order. */
  addresses: LanAddress[];
  /** The address preselected when nothing was chosen yet (the first private IPv4). */
  suggested: string | null;
}

export interface LanSharingRequest {
  enabled: boolean;
  /** Required when enabling: one of `LanSharing.addresses`. */
  address?: string;
}

/** Desktop: a backup of the embedded server's data folder, made by Settings → Backup. */
export interface BackupDone {
  /** The backup's own folder (made inside the folder the person chose). */
  folder: string;
  /** When its snapshot began: it holds what was saved before then. */
  made_at: string;
  /** The database's size, in bytes. */
  bytes: number;
  /** Every file it holds, the database first. */
  files: string[];
}

/** Desktop: what a running backup or restore is doing. */
export interface BackupProgress {
  /** The step's words before "the database": "copying", "checking the copy of", "hashing the copy of", "checking the backup of", "restoring", "starting the server on". */
  doing: string;
  /** The database's size, in bytes. */
  bytes: number;
  /** Seconds since the step began. */
  seconds: number;
}

/** Desktop: a backup put back into the embedded server's data folder. */
export interface RestoreDone {
  /** When the restored backup was made. */
  made_at: string;
  /** Where the data it replaced was moved (never deleted), or null when there was none. */
  replaced_into: string | null;
  /** The customer the app shows now (the backup's). */
  customer: string;
  /** True when the backup did not know the app's API token, so a new owner token was made. */
  token_renewed: boolean;
}

/** Desktop: the daily automatic backup of the embedded server's data (Settings → Backup). */
export interface AutoBackupState {
  enabled: boolean;
  /** The folder the dated backups go into. */
  folder: string | null;
  /** How many of them are kept (the oldest beyond are removed). */
  keep: number;
  /** The last automatic backup that worked, and the last failure since (cleared by a success). */
  last_at: string | null;
  last_error: string | null;
  /** When the next one is due (while enabled). */
  next_at: string | null;
}
