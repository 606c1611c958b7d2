// The IPC router, derived from the preload contract (AppOps): one handler per operation,
// the table type-checked for completeness, every message's sender checked first.
import type { IpcMainInvokeEvent, WebFrameMain } from 'electron';
import type { AppOpName, AppOps } from '../common/ipc-contract.ts';
import { CLIENT_LIMIT_KEYS, CLIENT_STATUSES, MAX_LISTED_CLIENTS } from '../common/client-types.ts';
import { fail, type Result } from '../common/result.ts';

export type Handlers = { [K in AppOpName]: (...args: Parameters<AppOps[K]>) => ReturnType<AppOps[K]> };

/** Every operation name, in one list the compiler keeps equal to AppOps. */
export const OP_NAMES = [
  'connectionInfo',
  'saveConnection',
  'serverInfo',
  'openApiDocument',
  'copyApiToken',
  'listZones',
  'listSessions',
  'getSession',
  'createSession',
  'sessionStatus',
  'pauseSession',
  'resumeSession',
  'getLimits',
  'updateLimits',
  'deleteLimits',
  'getSubscription',
  'putSubscription',
  'deleteSubscription',
  'getSubscriptionSettings',
  'updateSubscriptionSettings',
  'listAudit',
  'listWebhooks',
  'createWebhook',
  'deleteWebhook',
  'setWebhookEnabled',
  'webhookDeliveries',
  'testWebhook',
  'lanSharing',
  'setLanSharing',
  'backupData',
  'restoreData',
  'backupProgress',
  'autoBackup',
  'setAutoBackup',
  'usage',
  'listClients',
  'getClient',
  'updateClient',
  'getClientLimits',
  'updateClientLimits',
  'deleteClientLimits',
  'resetClientUsage',
  'listDevices',
  'deleteDevice',
  'runDoctor',
  'sessionConnections',
  'sessionRefusals',
  'clientRefusals',
  'openStream',
  'closeStream',
] as const satisfies readonly AppOpName[];
type Missing = Exclude<AppOpName, (typeof OP_NAMES)[number]>;
const _complete: Missing extends never ? true : Missing = true;
void _complete;

export interface IpcMainLike {
  handle(channel: string, listener: (event: IpcMainInvokeEvent, ...args: unknown[]) => unknown): void;
  removeHandler(channel: string): void;
}

/**
 * Registers the handlers. `isTrusted` decides whether a frame may call us: only the app's
 * own top-level window, loaded from the app's own files.
 */
export function registerIpc(ipc: IpcMainLike, handlers: Handlers, isTrusted: (frame: WebFrameMain | null) => boolean): () => void {
  for (const name of OP_NAMES) {
    ipc.handle(`app:${name}`, async (event, ...args): Promise<Result<unknown>> => {
      if (!isTrusted(event.senderFrame)) return fail(403, 'forbidden', 'IPC from an untrusted sender was refused.');
      if (!validArgs(name, args)) return fail(400, 'invalid_request', `Invalid arguments for ${name}.`);
      try {
        return await (handlers[name] as (...a: unknown[]) => Promise<Result<unknown>>)(...args);
      } catch (e) {
        return fail(500, 'internal_error', e instanceof Error ? e.message : String(e));
      }
    });
  }
  return () => {
    for (const name of OP_NAMES) ipc.removeHandler(`app:${name}`);
  };
}

const isStr = (v: unknown, max = 512): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScope = (v: unknown) => v === 'global' || v === 'client' || v === 'session';
/** A client id as the API's pattern has it (1 to 128 of A-Z a-z 0-9 . _ : @ -). */
const isClientId = (v: unknown) => typeof v === 'string' && /^[A-Za-z0-9._:@-]{1,128}$/.test(v);
/** { enabled: boolean, address?: an IP address literal } and nothing else. */
const isLanRequest = (v: unknown) =>
  isObj(v) &&
  typeof v.enabled === 'boolean' &&
  Object.keys(v).every((k) => k === 'enabled' || k === 'address') &&
  (v.address === undefined || (isStr(v.address, 64) && /^[0-9A-Fa-f.:]+$/.test(v.address)));

const SETTINGS_KEYS = new Set(['support_url', 'profile_web_page_url', 'announce']);
/** The subscription settings change: only its fields, each text (the API checks it) or null. */
const isSettingsUpdate = (v: unknown) => isObj(v) && Object.entries(v).every(([k, x]) => SETTINGS_KEYS.has(k) && (x === null || (typeof x === 'string' && x.length <= 4096)));

const USAGE_KEYS = new Set(['client_id', 'session_id', 'zone', 'node', 'from', 'to', 'step']);
/** The usage query: only its known keys, each a short string (the API checks the values). */
const isUsageQuery = (v: unknown) => isObj(v) && Object.entries(v).every(([k, x]) => USAGE_KEYS.has(k) && (x === undefined || isStr(x, 200)));

const CLIENT_UPDATE_KEYS = new Set(['disabled', 'expires_at']);
/** { disabled?: boolean, expires_at?: text or null } with at least one of them, and nothing else. */
const isClientUpdate = (v: unknown) =>
  isObj(v) &&
  Object.keys(v).length > 0 &&
  Object.entries(v).every(([k, x]) => CLIENT_UPDATE_KEYS.has(k) && (k === 'disabled' ? typeof x === 'boolean' : x === null || isStr(x, 64)));
const TEXT_LIMITS = new Set(['reset_period', 'reset_anchor']);
/** The override change: only client limit fields; amounts as numbers, period and anchor as text; null removes. */
const isOverrideUpdate = (v: unknown) =>
  isObj(v) &&
  Object.keys(v).length > 0 &&
  Object.entries(v).every(([k, x]) => (CLIENT_LIMIT_KEYS as readonly string[]).includes(k) && (x === null || (TEXT_LIMITS.has(k) ? isStr(x, 64) : typeof x === 'number')));
const isStatusFilter = (x: unknown) => x === undefined || (CLIENT_STATUSES as readonly unknown[]).includes(x);
const isClientIdList = (x: unknown) => x === undefined || (Array.isArray(x) && x.length >= 1 && x.length <= MAX_LISTED_CLIENTS && x.every(isClientId));
const isClientQuery = (v: unknown) => isObj(v) && Object.entries(v).every(([k, x]) => (k === 'status' ? isStatusFilter(x) : k === 'client_id' && isClientIdList(x)));

/** Cheap shape checks: the renderer is not trusted to send what the types promise. */
function validArgs(name: AppOpName, a: unknown[]): boolean {
  switch (name) {
    case 'getSession':
    case 'sessionStatus':
    case 'pauseSession':
    case 'resumeSession':
    case 'closeStream':
    case 'deleteWebhook':
    case 'webhookDeliveries':
    case 'testWebhook':
    case 'sessionConnections':
    case 'sessionRefusals':
      return a.length === 1 && isStr(a[0], 200);
    case 'listSessions':
    case 'listAudit':
    case 'createSession':
    case 'saveConnection':
    case 'createWebhook':
      return a.length === 1 && isObj(a[0]);
    case 'updateSubscriptionSettings':
      return a.length === 1 && isSettingsUpdate(a[0]);
    case 'getLimits':
    case 'deleteLimits':
      return a.length === 1 && isScope(a[0]);
    case 'getSubscription':
    case 'putSubscription':
    case 'deleteSubscription':
    case 'getClient':
    case 'getClientLimits':
    case 'deleteClientLimits':
    case 'resetClientUsage':
    case 'listDevices':
    case 'clientRefusals':
      return a.length === 1 && isClientId(a[0]);
    case 'setLanSharing':
      return a.length === 1 && isLanRequest(a[0]);
    case 'setAutoBackup':
      return a.length === 1 && typeof a[0] === 'boolean';
    case 'usage':
      return a.length === 1 && isUsageQuery(a[0]);
    case 'listClients':
      return a.length === 1 && isClientQuery(a[0]);
    case 'updateClient':
      return a.length === 2 && isClientId(a[0]) && isClientUpdate(a[1]);
    case 'updateClientLimits':
      return a.length === 2 && isClientId(a[0]) && isOverrideUpdate(a[1]);
    case 'deleteDevice':
      return a.length === 2 && isClientId(a[0]) && typeof a[1] === 'string' && /^[A-Za-z0-9._:+=@-]{1,128}$/.test(a[1]);
    case 'updateLimits':
      return a.length === 2 && isScope(a[0]) && isObj(a[1]);
    case 'setWebhookEnabled':
      return a.length === 2 && isStr(a[0], 200) && typeof a[1] === 'boolean';
    case 'openStream':
      return a.length === 2 && isStr(a[0], 64) && isObj(a[1]);
    default:
      return a.length === 0;
  }
}
