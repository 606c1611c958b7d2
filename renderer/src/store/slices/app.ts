// The app slice: connection phase (starting, need-token, ready, unreachable), connection and
// server info, the event stream's state, the current route (and navigate), the toasts, which
// platform the window runs on, the theme, the support tools of Settings, and the connection's
// health: a 429's wait (rateLimitedUntil) and an outage once connected (staleSince, probeServer).
import { routeHref } from '../routing.ts';
import { ops, type AppSlice, type SliceCreator } from '../state.ts';
import { getPlatform, platformKind, toApiError } from '../../platform/index.ts';
import { lastAnswerAt } from '../health.ts';
import { applyTheme, readTheme, saveTheme } from '../theme.ts';

/** The wait of a 429 without Retry-After. */
const DEFAULT_WAIT_S = 5;

type ConnectionPart = Pick<AppSlice, 'startApp' | 'submitToken' | 'forgetToken' | 'loadServerInfo' | 'saveConnection' | 'resolveLinkToken'>;

const createStatePart: SliceCreator<Omit<AppSlice, keyof ConnectionPart>> = (set, get) => {
  let toastSeq = 0;
  const theme = readTheme();
  applyTheme(theme);
  return {
    phase: 'starting',
    phaseError: null,
    connection: null,
    serverInfo: null,
    linkToken: null,
    streamState: 'connecting',
    streamError: null,
    route: { name: 'sessions' },
    toasts: [],
    platformKind: platformKind(),
    rateLimitedUntil: null,
    staleSince: null,
    theme,

    toast(text, kind = 'info') {
      const t = { id: ++toastSeq, kind, text };
      set((s) => ({ toasts: [...s.toasts.slice(-3), t] }));
      setTimeout(() => get().dismissToast(t.id), kind === 'error' ? 8000 : 4000);
    },
    dismissToast(id) {
      set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) }));
    },
    setRoute(route) {
      set({ route });
    },
    navigate(route) {
      const href = routeHref(route);
      if (location.hash !== href) location.hash = href;
      else set({ route });
    },
    noteGlobalError(e) {
      const err = toApiError(e);
      if (err.status === 401 && getPlatform().kind === 'web') set({ phase: 'need-token', phaseError: err });
      // A rate limit is not an outage: a notice counts down the server's Retry-After.
      else if (err.status === 429) set({ rateLimitedUntil: Date.now() + (err.retryAfter ?? DEFAULT_WAIT_S) * 1000 });
      else if (err.status === 0 && err.code === 'network_error') {
        // Once connected, an outage keeps the data on screen, marked as of the last answer.
        if (get().phase === 'ready') set((s) => (s.staleSince ? {} : { staleSince: lastAnswerAt() }));
        else set({ phase: 'unreachable', phaseError: err });
      }
      return err;
    },
    endRateLimit() {
      set({ rateLimitedUntil: null });
      const phase = get().phase;
      if (phase === 'starting' || phase === 'unreachable') void get().startApp({ retry: true });
    },
    async probeServer() {
      try {
        const { zones } = await ops().listZones();
        set({ staleSince: null, zones, zonesLoad: 'ready', zonesError: null });
        void get().loadServerInfo();
        void get().loadSessions();
      } catch (e) {
        get().noteGlobalError(e);
      }
    },
    setTheme(next) {
      saveTheme(next);
      applyTheme(next);
      set({ theme: next });
    },
    setStreamState(state, error) {
      set({ streamState: state, streamError: error ?? (state === 'open' ? null : get().streamError) });
      if (error?.status === 401 || error?.code === 'network_error') get().noteGlobalError(error);
    },
    copyApiToken: () => ops().copyApiToken(),
    openApiDocument: () => ops().openApiDocument(),
  };
};

/** Connecting: the token, the server's answer, the endpoint (desktop) and a link's token (web). */
const createConnectionPart: SliceCreator<ConnectionPart> = (set, get) => ({
  async startApp(opts = {}) {
    // A link's token that differs from the stored one: ask (LinkTokenDialog), never replace silently.
    const platform = getPlatform();
    if (platform.kind !== get().platformKind) set({ platformKind: platform.kind });
    if (platform.linkToken && !get().linkToken) {
      platform.linkToken().then(
        (who) => who && set({ linkToken: who }),
        () => get().toast('The token in the link was not accepted by the server; the stored token is kept.', 'error'),
      );
    }
    if (!opts.retry || get().phase !== 'unreachable') set({ phase: 'starting', phaseError: null });
    const phase = get().phase;
    try {
      const connection = await ops().connectionInfo();
      set({ connection });
      if (!connection.hasToken) {
        set({ phase: 'need-token' });
        return;
      }
      // The zone list doubles as the check that the token works and the server answers.
      await get().loadZones(true);
      if (get().phase !== phase) return;
      set({ phase: 'ready', phaseError: null });
      void get().loadServerInfo();
      void get().loadSessions();
    } catch (e) {
      const err = get().noteGlobalError(e);
      // A 429 waits for its countdown (endRateLimit starts again), not as "unreachable".
      if (get().phase === phase && err.status !== 429) set({ phase: 'unreachable', phaseError: err });
    }
  },
  async submitToken(token) {
    getPlatform().setToken?.(token.trim());
    await get().startApp();
  },
  forgetToken() {
    getPlatform().setToken?.(null);
    set({ phase: 'need-token', phaseError: null });
  },
  async loadServerInfo() {
    try {
      set({ serverInfo: await ops().serverInfo() });
    } catch {
      /* optional extension */
    }
  },
  async saveConnection(settings) {
    try {
      const before = get().connection?.baseUrl;
      const connection = await ops().saveConnection(settings);
      // Another server: its sessions, events and event ids are not the old server's, so the
      // old ones go (the stream would otherwise resume after an id the new server may not reach).
      if (connection.baseUrl !== before) set({ sessions: {}, sessionOrder: [], speedHistory: {}, events: [], lastEventId: undefined });
      set({ connection });
      get().toast('Connection settings saved.');
      await get().startApp();
      return null;
    } catch (e) {
      const message = toApiError(e).message;
      get().toast(message, 'error');
      return message;
    }
  },
  async resolveLinkToken(use) {
    getPlatform().resolveLinkToken?.(use);
    set({ linkToken: null });
    if (!use) return;
    // Another customer's token: nothing of the old one's view stays.
    set({ sessions: {}, sessionOrder: [], speedHistory: {}, events: [], lastEventId: undefined, serverInfo: null });
    await get().startApp();
  },
});

export const createAppSlice: SliceCreator<AppSlice> = (...a) => ({ ...createStatePart(...a), ...createConnectionPart(...a) });
