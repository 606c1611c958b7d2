// The typed IPC contract between the renderer and the Electron main process. Types only:
// the preload derives its bridge from `AppOps`, the main process derives its router from
// it, and the renderer's Electron platform calls `window.app`. It lives in common/ because
// all three read it and none of them owns it. One function per operation;
// every call resolves to a Result so the error record survives the IPC boundary intact.
import type {
  BackupDone,
  BackupProgress,
  ConnectionInfo,
  DoctorReport,
  ConnectionSettings,
  EventFilter,
  LanSharing,
  LanSharingRequest,
  LimitScope,
  LimitsRecord,
  LimitsUpdate,
  PauseResult,
  ServerInfo,
  Session,
  SessionCreateRequest,
  SessionEvent,
  SessionList,
  SessionListQuery,
  SessionStatusResponse,
  StreamState,
  Subscription,
  SubscriptionSettings,
  SubscriptionSettingsUpdate,
  UsageQuery,
  UsageReport,
  Webhook,
  WebhookCreate,
  WebhookDelivery,
  WebhookTestResult,
  ZoneList,
  AuditPage,
  AutoBackupState,
  AuditQuery,
  ConnectionList,
  RefusalList,
  RestoreDone,
} from './api-types.ts';
import type { Client, ClientList, ClientListQuery, ClientOverride, ClientOverrideUpdate, ClientUpdate, DeviceList } from './client-types.ts';
import type { Result } from './result.ts';

/** Request/response operations: each becomes one `ipcRenderer.invoke('app:<name>', ...args)`. */
export interface AppOps {
  connectionInfo(): Promise<Result<ConnectionInfo>>;
  saveConnection(settings: ConnectionSettings): Promise<Result<ConnectionInfo>>;
  serverInfo(): Promise<Result<ServerInfo>>;
  openApiDocument(): Promise<Result<unknown>>;
  /** Copies the API token to the clipboard in the main process (it never enters the renderer). */
  copyApiToken(): Promise<Result<true>>;
  listZones(): Promise<Result<ZoneList>>;
  listSessions(query: SessionListQuery): Promise<Result<SessionList>>;
  getSession(id: string): Promise<Result<Session>>;
  createSession(body: SessionCreateRequest): Promise<Result<Session>>;
  sessionStatus(id: string): Promise<Result<SessionStatusResponse>>;
  pauseSession(id: string): Promise<Result<PauseResult>>;
  resumeSession(id: string): Promise<Result<PauseResult>>;
  getLimits(scope: LimitScope): Promise<Result<LimitsRecord>>;
  updateLimits(scope: LimitScope, body: LimitsUpdate): Promise<Result<LimitsRecord>>;
  deleteLimits(scope: LimitScope): Promise<Result<true>>;
  /** The client's subscription (404 subscription_not_found while it is off). */
  getSubscription(clientId: string): Promise<Result<Subscription>>;
  /** Turns the client's subscription on, or rotates its URL when it is on (the old URL stops working). */
  putSubscription(clientId: string): Promise<Result<Subscription>>;
  /** Turns the client's subscription off: its URL stops working. */
  deleteSubscription(clientId: string): Promise<Result<true>>;
  /** What every subscription feed and page carries besides the sessions (support link, web page, announcement). */
  getSubscriptionSettings(): Promise<Result<SubscriptionSettings>>;
  /** Changes them (owner token; null clears a field). */
  updateSubscriptionSettings(body: SubscriptionSettingsUpdate): Promise<Result<SubscriptionSettings>>;
  /** The audit trail (who changed what), newest first; filters as GET /v2/audit. */
  listAudit(query: AuditQuery): Promise<Result<AuditPage>>;
  /** Webhooks: the customer's endpoints (owner token). */
  listWebhooks(): Promise<Result<{ webhooks: Webhook[] }>>;
  /** Registers an endpoint; the answer carries its secret, this once. */
  createWebhook(body: WebhookCreate): Promise<Result<Webhook & { secret: string }>>;
  deleteWebhook(id: string): Promise<Result<true>>;
  /** Turns an endpoint on or off (on again after the server disabled it: its failure count starts over). */
  setWebhookEnabled(id: string, enabled: boolean): Promise<Result<Webhook>>;
  /** The endpoint's last deliveries, newest first. */
  webhookDeliveries(id: string): Promise<Result<{ deliveries: WebhookDelivery[] }>>;
  /** Sends one signed test delivery to the endpoint now and tells what came back. */
  testWebhook(id: string): Promise<Result<WebhookTestResult>>;
  /** Desktop: "Let other devices connect", its state and this machine's addresses. */
  lanSharing(): Promise<Result<LanSharing>>;
  /** Desktop: turns sharing on (on an address) or off; main restarts the embedded server. */
  setLanSharing(request: LanSharingRequest): Promise<Result<LanSharing>>;
  /** Desktop: backs the embedded server's data up into a folder the person picks (null: they cancelled). */
  backupData(): Promise<Result<BackupDone | null>>;
  /** Desktop: puts a backup the person picks back, once they confirm; the embedded server restarts (null: cancelled). */
  restoreData(): Promise<Result<RestoreDone | null>>;
  /** Desktop: what the running backup or restore is doing (its step, the database's size, the seconds so far), or null when none runs. */
  backupProgress(): Promise<Result<BackupProgress | null>>;
  /** Desktop: the daily automatic backup's state. */
  autoBackup(): Promise<Result<AutoBackupState>>;
  /** Desktop: turns the daily backup on (main asks for its folder: null when the person cancelled) or off. */
  setAutoBackup(enabled: boolean): Promise<Result<AutoBackupState | null>>;
  /** The doctor's checks the server runs about itself (GET /v2/doctor, owner token). */
  runDoctor(): Promise<Result<DoctorReport>>;
  /** Support: the session's open connections on every data plane (GET /v2/sessions/{id}/connections). */
  sessionConnections(id: string): Promise<Result<ConnectionList>>;
  /** Support: why the session's connections were refused lately (GET /v2/sessions/{id}/refusals). */
  sessionRefusals(id: string): Promise<Result<RefusalList>>;
  /** Support: why the client's connections were refused lately (GET /v2/clients/{client_id}/refusals). */
  clientRefusals(clientId: string): Promise<Result<RefusalList>>;
  /** Usage history: GET /v2/usage with the query's filters, range and step. */
  usage(query: UsageQuery): Promise<Result<UsageReport>>;
  /** Clients: every client of the customer with its standing (GET /v2/clients). */
  listClients(query: ClientListQuery): Promise<Result<ClientList>>;
  getClient(clientId: string): Promise<Result<Client>>;
  /** Disables or enables the client, sets or clears its expiry. */
  updateClient(clientId: string, body: ClientUpdate): Promise<Result<Client>>;
  /** The client's own limits override (404 client_limits_not_found or limits_not_found when none). */
  getClientLimits(clientId: string): Promise<Result<ClientOverride>>;
  updateClientLimits(clientId: string, body: ClientOverrideUpdate): Promise<Result<ClientOverride>>;
  /** Removes the override: the template (customer client limits) applies again. */
  deleteClientLimits(clientId: string): Promise<Result<true>>;
  /** Starts the client's byte counts over. */
  resetClientUsage(clientId: string): Promise<Result<Client>>;
  /** The devices that fetched the client's subscription. */
  listDevices(clientId: string): Promise<Result<DeviceList>>;
  deleteDevice(clientId: string, hwid: string): Promise<Result<true>>;
  /** Starts an event subscription in main; events arrive through `onStreamMessage`. */
  openStream(streamId: string, filter: EventFilter): Promise<Result<true>>;
  closeStream(streamId: string): Promise<Result<true>>;
}

export type AppOpName = keyof AppOps;

/** Messages main pushes to the renderer on the single `app:stream` channel. */
export type StreamMessage =
  | { streamId: string; kind: 'event'; event: SessionEvent }
  | { streamId: string; kind: 'state'; state: StreamState; error?: { status: number; code: string; message: string } };

/** What `window.app` is. */
export interface AppBridge extends AppOps {
  readonly platform: 'electron';
  /** Subscribes to stream messages; returns the unsubscribe. */
  onStreamMessage(listener: (message: StreamMessage) => void): () => void;
  /** Main asks the renderer to navigate (tray menu "Open" on a session). */
  onNavigate(listener: (route: string) => void): () => void;
}

/** Channel names, derived from the operation names. */
export type OpChannel<K extends AppOpName = AppOpName> = `app:${K}`;
export type StreamChannel = 'app:stream';
export type NavigateChannel = 'app:navigate';
