// The store's whole shape: every slice's state and actions (the slices in slices/ implement
// them), their union State, the type every slice creator has, and the platform's operations the
// actions call. The shapes live here, not beside their slices, so that a slice can import State
// without State importing the slice back. Slices see the whole state through get() and set(), so
// an action may call another slice's action (the zustand slices pattern).
import type { StateCreator } from 'zustand';
import type {
  AutoBackupState,
  BackupDone,
  BackupProgress,
  ConnectionInfo,
  ConnectionSettings,
  LanSharing,
  LanSharingRequest,
  LimitScope,
  LimitsRecord,
  LimitsUpdate,
  RestoreDone,
  ServerInfo,
  Session,
  SessionCreateRequest,
  SessionEvent,
  SessionStatusResponse,
  StreamState,
  Subscription,
  Zone,
} from '../../../common/api-types.ts';
import type { ApiErrorInfo } from '../../../common/result.ts';
import type { Client, ClientOverride, ClientOverrideUpdate, ClientUpdate, Device } from '../../../common/client-types.ts';
import { getPlatform, type Platform } from '../platform/index.ts';
import type { PlatformOps } from '../platform/platform.ts';
import type { Route } from './routing.ts';
import type { SessionFilter, SessionView, SpeedHistory } from './session-view.ts';
import { track } from './health.ts';
import type { Theme } from './theme.ts';

/** Where a list stands while it loads. */
export type Load = 'idle' | 'loading' | 'ready' | 'error';

export interface Toast {
  id: number;
  kind: 'info' | 'error';
  text: string;
}

export interface AppSlice {
  phase: 'starting' | 'need-token' | 'ready' | 'unreachable';
  phaseError: ApiErrorInfo | null;
  connection: ConnectionInfo | null;
  serverInfo: ServerInfo | null;
  /** Web mode: a `#token=` link's token waiting for the user's answer, and whom it signs in as. */
  linkToken: { customer: string; role: string } | null;
  streamState: StreamState;
  streamError: ApiErrorInfo | null;
  route: Route;
  toasts: Toast[];
  /** Which platform the window runs on: the desktop app (electron) or a browser (web). */
  platformKind: Platform['kind'];
  /** A 429: when (ms) the server's Retry-After ends; null when not rate-limited. */
  rateLimitedUntil: number | null;
  /**
   * The server stopped answering while the app was ready: the time (ms) of its last answer, so
   * the data on screen stays and is marked as of then; null while it answers.
   */
  staleSince: number | null;
  /** The colour theme chosen in Settings (kept in this window's storage). */
  theme: Theme;

  toast(text: string, kind?: Toast['kind']): void;
  dismissToast(id: number): void;
  setRoute(route: Route): void;
  /** Shows a route: through the hash (so Back works), or directly when the hash already says it. */
  navigate(route: Route): void;
  /** Handles errors that concern the whole app (bad token, server gone). Returns the error. */
  noteGlobalError(e: unknown): ApiErrorInfo;
  /**
   * Connects: reads the connection, checks the token and the server, then loads. A `retry`
   * from the unreachable screen keeps that screen up while it tries (no flash of the
   * "connecting" screen every few seconds, no lost form input).
   */
  startApp(opts?: { retry?: boolean }): Promise<void>;
  submitToken(token: string): Promise<void>;
  forgetToken(): void;
  loadServerInfo(): Promise<void>;
  /** Null when saved; else why not (also shown as a toast). */
  saveConnection(settings: ConnectionSettings): Promise<string | null>;
  /** Use (true) or drop the token of a `#token=` link. */
  resolveLinkToken(use: boolean): Promise<void>;
  setStreamState(state: StreamState, error?: ApiErrorInfo): void;
  /** The rate limit's wait is over: the notice goes (and a start that was refused tries again). */
  endRateLimit(): void;
  /** During an outage: asks the server once; when it answers, the data is loaded again. */
  probeServer(): Promise<void>;
  setTheme(theme: Theme): void;
  /** Support tools: put the API token on the clipboard; read the server's OpenAPI document. */
  copyApiToken: PlatformOps['copyApiToken'];
  openApiDocument: PlatformOps['openApiDocument'];
}

export interface ZonesSlice {
  zones: Zone[];
  zonesLoad: Load;
  zonesError: ApiErrorInfo | null;
  /** Loads the zones; `rethrow` lets startApp use the answer as its token check. */
  loadZones(rethrow?: boolean): Promise<void>;
}

export interface SessionsSlice {
  sessions: Record<string, SessionView>;
  /** Ids, newest first. */
  sessionOrder: string[];
  sessionsLoad: Load;
  sessionsError: ApiErrorInfo | null;
  /** Older sessions are on the server beyond what is loaded (loadMoreSessions fetches the next page). */
  sessionsMore: boolean;
  sessionFilter: SessionFilter;
  creating: boolean;
  createError: ApiErrorInfo | null;
  speedHistory: SpeedHistory;
  actionPending: Record<string, boolean>;
  actionError: Record<string, ApiErrorInfo | null>;

  /** Loads the newest sessions page by page, up to 10,000 (the first page shows at once); older ones wait for loadMoreSessions. */
  loadSessions(): Promise<void>;
  /** The next page of older sessions, after what loadSessions (and earlier calls) loaded. */
  loadMoreSessions(): Promise<void>;
  /**
   * Picks up sessions created elsewhere (another window, the API, the CLI) and refreshes the
   * newest ones: one small request, merged into what is loaded.
   */
  syncNewest(): Promise<void>;
  /** Merges a full session into the list (newly created or refreshed). */
  upsertSession(s: Session): void;
  watchHistory(id: string, on: boolean): void;
  applyStatus(id: string, st: SessionStatusResponse): void;
  /** Loads one session into the store; the error says whether it is missing or the request failed. */
  fetchSession(id: string): Promise<{ session: Session; error: null } | { session: null; error: ApiErrorInfo }>;
  refreshSession(id: string): Promise<Session | null>;
  pollStatus(id: string): Promise<void>;
  setSessionFilter(f: Partial<SessionFilter>): void;
  createSession(req: SessionCreateRequest): Promise<Session | null>;
  setPaused(id: string, paused: boolean): Promise<void>;
}

export interface EventsSlice {
  events: SessionEvent[];
  eventFilter: { sessionId: string; type: string };
  lastEventId: number | undefined;
  /** Applies a batch of events: the event list, and each session's counters and status. */
  applyEvents(batch: SessionEvent[]): void;
  setEventFilter(f: Partial<EventsSlice['eventFilter']>): void;
  clearEvents(): void;
}

export interface LimitsState {
  load: Load | 'unset' | 'forbidden';
  record: LimitsRecord | null;
  error: ApiErrorInfo | null;
  saving: boolean;
}

export interface LimitsSlice {
  limits: Record<LimitScope, LimitsState>;
  loadLimits(scope: LimitScope): Promise<void>;
  saveLimits(scope: LimitScope, body: LimitsUpdate): Promise<boolean>;
  deleteLimits(scope: LimitScope): Promise<void>;
}

export interface SubscriptionEntry {
  /** `ready` with `sub: null` means the subscription is off. */
  load: Load;
  sub: Subscription | null;
  error: ApiErrorInfo | null;
  pending: boolean;
}

export interface SharingSlice {
  subscriptions: Record<string, SubscriptionEntry>;
  lan: LanSharing | null;
  lanPending: boolean;
  lanError: ApiErrorInfo | null;

  loadSubscription(clientId: string): Promise<void>;
  /** On when off; a new URL (the old one stops working) when on. */
  putSubscription(clientId: string): Promise<boolean>;
  deleteSubscription(clientId: string): Promise<boolean>;
  /** The support link, web page and announcement every subscription carries (Settings → Subscription page keeps them on screen). */
  loadSubscriptionSettings: PlatformOps['getSubscriptionSettings'];
  saveSubscriptionSettings: PlatformOps['updateSubscriptionSettings'];
  loadLanSharing(): Promise<void>;
  setLanSharing(request: LanSharingRequest): Promise<boolean>;
}

/** The customer's webhook endpoints and their deliveries (Settings → Webhooks keeps them on screen). */
export interface WebhooksSlice {
  listWebhooks: PlatformOps['listWebhooks'];
  createWebhook: PlatformOps['createWebhook'];
  deleteWebhook: PlatformOps['deleteWebhook'];
  setWebhookEnabled: PlatformOps['setWebhookEnabled'];
  webhookDeliveries: PlatformOps['webhookDeliveries'];
  testWebhook: PlatformOps['testWebhook'];
  /** Settings → Doctor: the server's checks on itself. */
  runDoctor: PlatformOps['runDoctor'];
}

/** Support: what a session is doing now and why connections were refused (SessionDetail's cards keep what they show). */
export interface SupportSlice {
  sessionConnections: PlatformOps['sessionConnections'];
  sessionRefusals: PlatformOps['sessionRefusals'];
  clientRefusals: PlatformOps['clientRefusals'];
}

export interface HistorySlice {
  /** The live timeline of each session someone watches: its newest events first (at most 500). */
  timelines: Record<string, SessionEvent[]>;
  /** Streams one session's events into `timelines` (batched: one render per burst); returns the stop. */
  watchTimeline(id: string): () => void;
  /** Usage history (GET /v2/usage) for a filter, range and step. */
  loadUsage: PlatformOps['usage'];
  /** One page of the audit trail. */
  listAudit: PlatformOps['listAudit'];
}

/** A client's own limits override: unset when it has none (the template applies). */
export interface OverrideState {
  load: Load | 'unset' | 'forbidden';
  record: ClientOverride | null;
  error: ApiErrorInfo | null;
  saving: boolean;
}

export interface DevicesEntry {
  load: Load;
  devices: Device[];
  error: ApiErrorInfo | null;
  /** The hwid being removed, if any. */
  removing: string | null;
}

export interface ClientsSlice {
  clients: Record<string, Client>;
  /** As the server lists them. */
  clientOrder: string[];
  /** `unsupported`: the server has no clients API (the screens fall back on the sessions). */
  clientsLoad: Load | 'unsupported';
  clientsError: ApiErrorInfo | null;
  clientPending: Record<string, boolean>;
  clientError: Record<string, ApiErrorInfo | null>;
  overrides: Record<string, OverrideState>;
  devices: Record<string, DevicesEntry>;

  /** Every client, in the server's order (the clients screen). */
  loadClients(): Promise<void>;
  /** Only these clients' records (those not held yet, with `missingOnly`), merged into `clients` (the sessions screen's rows); the order is left as it is. */
  loadClientsOf(ids: string[], opts?: { missingOnly?: boolean }): Promise<void>;
  loadClient(id: string): Promise<void>;
  /** Disable or enable (disabling cuts live connections), set or clear the expiry. */
  updateClient(id: string, body: ClientUpdate): Promise<boolean>;
  resetClientUsage(id: string): Promise<boolean>;
  loadClientLimits(id: string): Promise<void>;
  saveClientLimits(id: string, body: ClientOverrideUpdate): Promise<boolean>;
  /** Removes the override: the template applies again. */
  deleteClientLimits(id: string): Promise<boolean>;
  loadDevices(id: string): Promise<void>;
  removeDevice(id: string, hwid: string): Promise<boolean>;
}

/** Desktop: Settings → Backup. `lastRestore` stays to say what the restore replaced and where that went. */
export interface BackupSlice {
  backupPending: 'backup' | 'restore' | null;
  /** While one runs: what it is doing (step, database size, seconds), once main has said. */
  backupProgress: BackupProgress | null;
  backupError: ApiErrorInfo | null;
  lastBackup: BackupDone | null;
  lastRestore: RestoreDone | null;
  /** The daily backup (null until read), and whether turning it on or off is under way. */
  autoBackup: AutoBackupState | null;
  autoBackupPending: boolean;
  backupData(): Promise<void>;
  restoreData(): Promise<void>;
  loadAutoBackup(): Promise<void>;
  setAutoBackup(enabled: boolean): Promise<void>;
}

export type State = AppSlice & ZonesSlice & SessionsSlice & EventsSlice & LimitsSlice & SharingSlice & WebhooksSlice & SupportSlice & HistorySlice & ClientsSlice & BackupSlice;

export type SliceCreator<Slice> = StateCreator<State, [], [], Slice>;

/** The platform's operations, each noting when the server last answered (health.ts). */
export const ops = () => track(getPlatform().ops);
