// Wire shapes of the clients and devices API (GET/PATCH /v2/clients..., /v2/clients/{id}/limits,
// /reset-usage, /devices) as the desktop app sees them: main, preload and renderer alike.
// Neutral ground: no Node and no DOM.
import type { LimitsRecord, LimitsUpdate } from './api-types.ts';

export type ClientStatus = 'active' | 'idle' | 'over_quota' | 'paused' | 'expired' | 'disabled';
export const CLIENT_STATUSES: readonly ClientStatus[] = ['active', 'idle', 'over_quota', 'paused', 'expired', 'disabled'];

/** The client limit fields, each as the record has it. */
export interface ClientLimitValues {
  downloaded_bytes?: number;
  uploaded_bytes?: number;
  reset_period?: 'none' | 'day' | 'week' | 'month' | 'rolling_30d';
  reset_anchor?: string;
  download_speed?: number;
  upload_speed?: number;
  max_sessions?: number;
  max_reconnections?: number;
  max_devices?: number;
}
export type ClientLimitKey = keyof ClientLimitValues;
/** Every client limit field, in the order the forms show them. */
export const CLIENT_LIMIT_KEYS: readonly ClientLimitKey[] = [
  'downloaded_bytes',
  'uploaded_bytes',
  'reset_period',
  'reset_anchor',
  'download_speed',
  'upload_speed',
  'max_sessions',
  'max_reconnections',
  'max_devices',
];

export interface Client {
  client_id: string;
  status: ClientStatus;
  /** How many sessions the client has. */
  sessions: number;
  uploaded_bytes: number;
  downloaded_bytes: number;
  /** The current period of a periodic byte cap, and what moved in it; null without one. */
  period: null | { start: string; end: string | null; uploaded_bytes: number; downloaded_bytes: number };
  /** The client limits in force (override over template). */
  limits: ClientLimitValues;
  /** Where each value in force comes from. */
  limit_sources: Partial<Record<ClientLimitKey, 'override' | 'template'>>;
  over_quota_until?: string;
  disabled: boolean;
  expires_at: string | null;
  last_seen: string | null;
}

export interface ClientList {
  clients: Client[];
}

export interface ClientListQuery {
  status?: ClientStatus;
}

/** PATCH /v2/clients/{id}: disable or enable, set or clear (null) the expiry. */
export interface ClientUpdate {
  disabled?: boolean;
  expires_at?: string | null;
}

/** The client's own override record (like /v2/customer/limits/client); null in a PATCH removes a field. */
export type ClientOverride = LimitsRecord;
export type ClientOverrideUpdate = LimitsUpdate;

/** The devices API's shapes, as the server's schemas have them. */
export type { DeviceList } from '../server/contract/devices.ts';
import type { DeviceList } from '../server/contract/devices.ts';
export type Device = DeviceList['devices'][number];
