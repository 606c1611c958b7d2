// The app slice: connection phase (starting, need-token, ready, unreachable), connection and
// server info, the event stream's state, the current route and the toasts.
import { getPlatform, toApiError } from '../../platform/index.ts';
import type { ConnectionInfo, ConnectionSettings, ServerInfo, StreamState } from '../../../../common/api-types.ts';
import type { ApiErrorInfo } from '../../../../common/result.ts';
import type { Route } from '../routing.ts';
import { ops, type SliceCreator } from '../state.ts';

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

  toast(text: string, kind?: Toast['kind']): void;
  dismissToast(id: number): void;
  setRoute(route: Route): void;
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
}

export const createAppSlice: SliceCreator<AppSlice> = (set, get) => {
  let toastSeq = 0;
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
    noteGlobalError(e) {
      const err = toApiError(e);
      if (err.status === 401 && getPlatform().kind === 'web') set({ phase: 'need-token', phaseError: err });
      else if (err.status === 0 && err.code === 'network_error') set({ phase: 'unreachable', phaseError: err });
      return err;
    },
    async startApp(opts = {}) {
      // A link's token that differs from the stored one: ask (LinkTokenDialog), never replace silently.
      const platform = getPlatform();
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
        if (get().phase === phase) set({ phase: 'unreachable', phaseError: err });
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
    setStreamState(state, error) {
      set({ streamState: state, streamError: error ?? (state === 'open' ? null : get().streamError) });
      if (error?.status === 401) get().noteGlobalError(error);
    },
  };
};
