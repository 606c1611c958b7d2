// The typed API client of the main process: one method per operation of the v2 API,
// each resolving to a Result (never throwing), so IPC can pass errors through unchanged.
// It targets whichever endpoint is current (the embedded server or a remote one).
import { buildQuery } from '../server/contract/query-string.ts';
import { errorInfoFrom } from '../common/error-info.ts';
import type {
  AuditPage,
  AuditQuery,
  DoctorReport,
  ConnectionList,
  RefusalList,
  LimitScope,
  LimitsRecord,
  LimitsUpdate,
  PauseResult,
  ServerInfo,
  Session,
  SessionCreateRequest,
  SessionList,
  SessionListQuery,
  SessionStatusResponse,
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
} from '../common/api-types.ts';
import type { Client, ClientList, ClientListQuery, ClientOverride, ClientOverrideUpdate, ClientUpdate, DeviceList } from '../common/client-types.ts';
import { fail, type Result } from '../common/result.ts';

export interface Endpoint {
  baseUrl: string;
  token: string;
}

export class ApiClient {
  #endpoint: () => Endpoint | null;

  constructor(endpoint: () => Endpoint | null) {
    this.#endpoint = endpoint;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<Result<T>> {
    const ep = this.#endpoint();
    if (!ep) return fail(401, 'unauthorized', 'No API endpoint or token is configured.');
    const headers: Record<string, string> = { Authorization: `Bearer ${ep.token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(ep.baseUrl + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
    } catch (e) {
      return fail(0, 'network_error', `The server at ${ep.baseUrl} could not be reached.`, { cause: String(e) });
    }
    if (res.status === 204) return { ok: true, value: true as T };
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    if (!res.ok) return { ok: false, error: errorInfoFrom(res, json) };
    return { ok: true, value: json as T };
  }

  zones = () => this.request<ZoneList>('GET', '/zones');
  serverInfo = () => this.request<ServerInfo>('GET', '/server-info');
  doctor = () => this.request<DoctorReport>('GET', '/doctor');
  openApi = () => this.request<unknown>('GET', '/openapi.json');
  listSessions = (q: SessionListQuery) => this.request<SessionList>('GET', `/sessions${query(q as Record<string, unknown>)}`);
  getSession = (id: string) => this.request<Session>('GET', `/sessions/${encodeURIComponent(id)}`);
  createSession = (b: SessionCreateRequest) => this.request<Session>('POST', '/sessions', b);
  status = (id: string) => this.request<SessionStatusResponse>('GET', `/sessions/${encodeURIComponent(id)}/status`);
  pause = (id: string) => this.request<PauseResult>('PATCH', `/sessions/${encodeURIComponent(id)}/pause`);
  resume = (id: string) => this.request<PauseResult>('PATCH', `/sessions/${encodeURIComponent(id)}/resume`);
  getLimits = (s: LimitScope) => this.request<LimitsRecord>('GET', `/customer/limits/${s}`);
  updateLimits = (s: LimitScope, b: LimitsUpdate) => this.request<LimitsRecord>('PATCH', `/customer/limits/${s}`, b);
  deleteLimits = (s: LimitScope) => this.request<true>('DELETE', `/customer/limits/${s}`);
  getSubscription = (c: string) => this.request<Subscription>('GET', `/subscriptions/${encodeURIComponent(c)}`);
  putSubscription = (c: string) => this.request<Subscription>('PUT', `/subscriptions/${encodeURIComponent(c)}`);
  deleteSubscription = (c: string) => this.request<true>('DELETE', `/subscriptions/${encodeURIComponent(c)}`);
  getSubscriptionSettings = () => this.request<SubscriptionSettings>('GET', '/subscription-settings');
  updateSubscriptionSettings = (b: SubscriptionSettingsUpdate) => this.request<SubscriptionSettings>('PATCH', '/subscription-settings', b);
  listAudit = (q: AuditQuery) => this.request<AuditPage>('GET', `/audit${query(q as Record<string, unknown>)}`);
  sessionConnections = (id: string) => this.request<ConnectionList>('GET', `/sessions/${encodeURIComponent(id)}/connections`);
  sessionRefusals = (id: string) => this.request<RefusalList>('GET', `/sessions/${encodeURIComponent(id)}/refusals`);
  clientRefusals = (c: string) => this.request<RefusalList>('GET', `/clients/${encodeURIComponent(c)}/refusals`);
  usage = (q: UsageQuery) => this.request<UsageReport>('GET', `/usage${query(q as Record<string, unknown>)}`);
  listWebhooks = () => this.request<{ webhooks: Webhook[] }>('GET', '/webhooks');
  createWebhook = (b: WebhookCreate) => this.request<Webhook & { secret: string }>('POST', '/webhooks', b);
  deleteWebhook = (id: string) => this.request<true>('DELETE', `/webhooks/${encodeURIComponent(id)}`);
  setWebhookEnabled = (id: string, enabled: boolean) => this.request<Webhook>('PATCH', `/webhooks/${encodeURIComponent(id)}`, { enabled });
  webhookDeliveries = (id: string) => this.request<{ deliveries: WebhookDelivery[] }>('GET', `/webhooks/${encodeURIComponent(id)}/deliveries`);
  testWebhook = (id: string) => this.request<WebhookTestResult>('POST', `/webhooks/${encodeURIComponent(id)}/test`);
  listClients = (q: ClientListQuery) => this.request<ClientList>('GET', `/clients${query(q as Record<string, unknown>)}`);
  getClient = (c: string) => this.request<Client>('GET', clientPath(c));
  updateClient = (c: string, b: ClientUpdate) => this.request<Client>('PATCH', clientPath(c), b);
  getClientLimits = (c: string) => this.request<ClientOverride>('GET', `${clientPath(c)}/limits`);
  updateClientLimits = (c: string, b: ClientOverrideUpdate) => this.request<ClientOverride>('PATCH', `${clientPath(c)}/limits`, b);
  deleteClientLimits = (c: string) => this.request<true>('DELETE', `${clientPath(c)}/limits`);
  resetClientUsage = (c: string) => this.request<Client>('POST', `${clientPath(c)}/reset-usage`);
  listDevices = (c: string) => this.request<DeviceList>('GET', `${clientPath(c)}/devices`);
  deleteDevice = (c: string, hwid: string) => this.request<true>('DELETE', `${clientPath(c)}/devices/${encodeURIComponent(hwid)}`);
}

const clientPath = (c: string) => `/clients/${encodeURIComponent(c)}`;

/** Query strings as the API reads them (shared with the renderer). */
export const query = buildQuery;
