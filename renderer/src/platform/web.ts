// Web mode: the renderer talks to the API itself, over fetch and the `eventsource` package
// (whose `fetch` option lets us send the Authorization header, which the browser's own
// EventSource cannot) driven by common/event-stream.ts.
// The token is asked for once and kept in localStorage.
import { buildQuery } from '../../../server/contract/query-string.ts';
import { errorInfoFrom } from '../../../common/error-info.ts';
import { EventStream } from '../../../common/event-stream.ts';
import { EventSource } from 'eventsource';
import type { Platform, PlatformOps, StreamHandlers } from './platform.ts';
import { ApiError } from './platform.ts';
import type { EventFilter, LimitScope } from '../../../common/api-types.ts';

export const TOKEN_KEY = 'vpn-access.token';
export const WEB_BACKUP_REASON = 'This page talks to a server that was started from the command line: back it up on that machine with vpn-access backup.';
export const WEB_LAN_REASON = 'This page talks to a server that was started from the command line; that server decides which address it listens on.';
export const BASE_KEY = 'vpn-access.baseUrl';

/** A link's token that differs from the stored one: held until the user decides (linkToken). */
let heldLinkToken: string | null = null;

/**
 * A token handed over in the address (`/#token=...` or `?token=...`, e.g. a link printed by
 * the server for support staff) is removed from the address bar. It is kept like a typed one
 * only when no token is stored yet; a different stored token is never replaced silently (a
 * crafted link could sign support staff into another customer): it is held, and the app asks.
 */
function takeTokenFromAddress(): void {
  try {
    const url = new URL(location.href);
    const fromHash = /^#token=([^&]+)/.exec(url.hash)?.[1];
    const fromQuery = url.searchParams.get('token');
    const token = fromHash ? decodeURIComponent(fromHash) : fromQuery;
    if (!token) return;
    const stored = localStorage.getItem(TOKEN_KEY);
    if (!stored) localStorage.setItem(TOKEN_KEY, token);
    else if (stored !== token) heldLinkToken = token;
    url.searchParams.delete('token');
    if (fromHash) url.hash = '';
    history.replaceState(null, '', url.pathname + url.search + url.hash);
  } catch {
    /* storage or history unavailable */
  }
}

function readToken(): string | null {
  takeTokenFromAddress();
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function defaultBaseUrl(): string {
  try {
    const saved = localStorage.getItem(BASE_KEY);
    if (saved) return saved;
  } catch {
    /* storage unavailable */
  }
  return new URL('v2', location.origin + '/').href;
}

async function errorFrom(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON */
  }
  return new ApiError(errorInfoFrom(res, body));
}

type Call = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/** The API's operations over `call` (fetch with the token): one line each. */
function webOps(call: Call, getToken: () => string | null, baseUrl: string): Platform['ops'] {
  const limitsPath = (scope: LimitScope) => `/customer/limits/${encodeURIComponent(scope)}`;
  const subscriptionPath = (clientId: string) => `/subscriptions/${encodeURIComponent(clientId)}`;
  const clientPath = (clientId: string) => `/clients/${encodeURIComponent(clientId)}`;
  const qs = buildQuery;

  return {
    connectionInfo: async () => ({ mode: 'web', baseUrl, hasToken: !!getToken() }),
    saveConnection: async () => {
      throw new ApiError({ status: 400, code: 'not_supported', message: 'The endpoint is chosen in the desktop app only.', details: {} });
    },
    serverInfo: () => call('GET', '/server-info'),
    runDoctor: () => call('GET', '/doctor'),
    sessionConnections: (id) => call('GET', `/sessions/${encodeURIComponent(id)}/connections`),
    sessionRefusals: (id) => call('GET', `/sessions/${encodeURIComponent(id)}/refusals`),
    clientRefusals: (clientId) => call('GET', `/clients/${encodeURIComponent(clientId)}/refusals`),
    openApiDocument: () => call('GET', '/openapi.json'),
    copyApiToken: async () => {
      const token = getToken();
      if (!token) throw new ApiError({ status: 401, code: 'unauthorized', message: 'No API token has been entered.', details: {} });
      await navigator.clipboard.writeText(token);
      return true as const;
    },
    listZones: () => call('GET', '/zones'),
    listSessions: (q) => call('GET', `/sessions${qs({ ...q })}`),
    getSession: (id) => call('GET', `/sessions/${encodeURIComponent(id)}`),
    createSession: (body) => call('POST', '/sessions', body),
    sessionStatus: (id) => call('GET', `/sessions/${encodeURIComponent(id)}/status`),
    pauseSession: (id) => call('PATCH', `/sessions/${encodeURIComponent(id)}/pause`),
    resumeSession: (id) => call('PATCH', `/sessions/${encodeURIComponent(id)}/resume`),
    getLimits: (scope) => call('GET', limitsPath(scope)),
    updateLimits: (scope, body) => call('PATCH', limitsPath(scope), body),
    deleteLimits: (scope) => call('DELETE', limitsPath(scope)),
    getSubscription: (clientId) => call('GET', subscriptionPath(clientId)),
    putSubscription: (clientId) => call('PUT', subscriptionPath(clientId)),
    listAudit: (q) => call('GET', `/audit${qs({ ...q })}`),
    deleteSubscription: (clientId) => call('DELETE', subscriptionPath(clientId)),
    getSubscriptionSettings: () => call('GET', '/subscription-settings'),
    updateSubscriptionSettings: (body) => call('PATCH', '/subscription-settings', body),
    listWebhooks: () => call('GET', '/webhooks'),
    createWebhook: (body) => call('POST', '/webhooks', body),
    deleteWebhook: (id) => call('DELETE', `/webhooks/${encodeURIComponent(id)}`),
    setWebhookEnabled: (id, enabled) => call('PATCH', `/webhooks/${encodeURIComponent(id)}`, { enabled }),
    webhookDeliveries: (id) => call('GET', `/webhooks/${encodeURIComponent(id)}/deliveries`),
    testWebhook: (id) => call('POST', `/webhooks/${encodeURIComponent(id)}/test`),
    // The browser cannot rebind the server: `vpn-access serve --host/--public-host/--egress lan` does.
    lanSharing: async () => ({ supported: false, reason: WEB_LAN_REASON, enabled: false, address: null, addresses: [], suggested: null }),
    setLanSharing: async () => {
      throw new ApiError({ status: 400, code: 'not_supported', message: WEB_LAN_REASON, details: {} });
    },
    // Backups are made where the server runs: `vpn-access backup` / `restore` (the card says how).
    backupData: async () => {
      throw new ApiError({ status: 400, code: 'not_supported', message: WEB_BACKUP_REASON, details: {} });
    },
    restoreData: async () => {
      throw new ApiError({ status: 400, code: 'not_supported', message: WEB_BACKUP_REASON, details: {} });
    },
    backupProgress: async () => null,
    autoBackup: async () => ({ enabled: false, folder: null, keep: 0, last_at: null, last_error: null, next_at: null }),
    setAutoBackup: async () => {
      throw new ApiError({ status: 400, code: 'not_supported', message: WEB_BACKUP_REASON, details: {} });
    },
    usage: (q) => call('GET', `/usage${qs({ ...q })}`),
    listClients: (q) => call('GET', `/clients${qs({ ...q })}`),
    getClient: (c) => call('GET', clientPath(c)),
    updateClient: (c, body) => call('PATCH', clientPath(c), body),
    getClientLimits: (c) => call('GET', `${clientPath(c)}/limits`),
    updateClientLimits: (c, body) => call('PATCH', `${clientPath(c)}/limits`, body),
    deleteClientLimits: (c) => call('DELETE', `${clientPath(c)}/limits`),
    resetClientUsage: (c) => call('POST', `${clientPath(c)}/reset-usage`),
    listDevices: (c) => call('GET', `${clientPath(c)}/devices`),
    deleteDevice: (c, hwid) => call('DELETE', `${clientPath(c)}/devices/${encodeURIComponent(hwid)}`),
  } satisfies Omit<PlatformOps, 'openStream' | 'closeStream'>;
}

export function createWebPlatform(): Platform {
  const baseUrl = defaultBaseUrl();
  let token = readToken();
  // A `#token=` link followed inside the running page: load again, so it is held and asked about.
  window.addEventListener('hashchange', () => {
    if (/^#token=/.test(location.hash)) location.reload();
  });

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (!token) throw new ApiError({ status: 401, code: 'unauthorized', message: 'No API token has been entered yet.', details: {} });
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    try {
      // A server that accepts the connection but never answers must not leave a spinner
      // forever: after 15 s (as in the desktop app's client) it counts as unreachable.
      res = await fetch(baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
    } catch (e) {
      throw new ApiError({ status: 0, code: 'network_error', message: `The server at ${baseUrl} could not be reached.`, details: { cause: String(e) } });
    }
    if (!res.ok) throw await errorFrom(res);
    if (res.status === 204) return true as T;
    return (await res.json()) as T;
  }

  const ops = webOps(call, () => token, baseUrl);

  function subscribe(filter: EventFilter, h: StreamHandlers): () => void {
    const stream = new EventStream({ EventSource, endpoint: () => ({ baseUrl, token }), filter, onEvent: (e) => h.onEvent(e), onState: (state, error) => h.onState?.(state, error) });
    return () => stream.close();
  }

  return {
    kind: 'web',
    ops,
    subscribe,
    onNavigate: () => () => {},
    async linkToken() {
      const held = heldLinkToken;
      if (!held) return null;
      const res = await fetch(baseUrl + '/server-info', { headers: { Authorization: `Bearer ${held}` }, signal: AbortSignal.timeout(15_000) }).catch(() => null);
      if (!res?.ok) {
        heldLinkToken = null;
        throw res ? await errorFrom(res) : new ApiError({ status: 0, code: 'network_error', message: `The server at ${baseUrl} could not be reached.`, details: {} });
      }
      const info = (await res.json()) as { token?: { customer: string; role: string } };
      return info.token ?? { customer: 'unknown customer', role: 'unknown role' };
    },
    resolveLinkToken(use) {
      const held = heldLinkToken;
      heldLinkToken = null;
      if (use && held) this.setToken!(held);
    },
    setToken(next) {
      token = next;
      try {
        if (next) localStorage.setItem(TOKEN_KEY, next);
        else localStorage.removeItem(TOKEN_KEY);
      } catch {
        /* storage unavailable: keep it for this page only */
      }
    },
  };
}
