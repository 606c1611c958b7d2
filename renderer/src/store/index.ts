// One zustand store made of slices. Actions are the only writers; components read through
// the selectors in selectors.ts; events from the platform enter through bridge.ts.
import { create } from 'zustand';
import { getPlatform, toApiError } from '../platform/index.ts';
import type {
  ConnectionInfo,
  ConnectionSettings,
  LimitScope,
  LimitsRecord,
  LimitsUpdate,
  ServerInfo,
  Session,
  SessionCreateRequest,
  SessionEvent,
  SessionStatusResponse,
  StreamState,
  Zone,
} from '../../../common/api-types.ts';
import type { ApiErrorInfo } from '../../../common/result.ts';

export type Route =
  | { name: 'sessions' }
  | { name: 'new' }
  | { name: 'session'; id: string }
  | { name: 'limits'; scope: LimitScope }
  | { name: 'events' }
  | { name: 'proxy' }
  | { name: 'settings' };

export interface SessionView extends Session {
  /** Bytes per second, measured between the last two counter updates. */
  up_speed: number;
  down_speed: number;
  /** ms timestamp of the last counter update (for speeds and staleness). */
  sampled_at: number;
}

export interface Toast {
  id: number;
  kind: 'info' | 'error';
  text: string;
}

type Load = 'idle' | 'loading' | 'ready' | 'error';

export interface LimitsState {
  load: Load | 'unset' | 'forbidden';
  record: LimitsRecord | null;
  error: ApiErrorInfo | null;
  saving: boolean;
}

export interface AppSlice {
  phase: 'starting' | 'need-token' | 'ready' | 'unreachable';
  phaseError: ApiErrorInfo | null;
  connection: ConnectionInfo | null;
  serverInfo: ServerInfo | null;
  streamState: StreamState;
  streamError: ApiErrorInfo | null;
  route: Route;
  toasts: Toast[];
}

export interface ZonesSlice {
  zones: Zone[];
  zonesLoad: Load;
  zonesError: ApiErrorInfo | null;
}

export interface SessionsSlice {
  sessions: Record<string, SessionView>;
  /** Ids, newest first. */
  sessionOrder: string[];
  sessionsLoad: Load;
  sessionsError: ApiErrorInfo | null;
  sessionFilter: { text: string; status: string; zone: string };
  creating: boolean;
  createError: ApiErrorInfo | null;
  /** Per-session speed history for the detail chart: [t, up, down]. */
  speedHistory: Record<string, Array<[number, number, number]>>;
  actionPending: Record<string, boolean>;
  actionError: Record<string, ApiErrorInfo | null>;
}

export interface EventsSlice {
  events: SessionEvent[];
  eventFilter: { sessionId: string; type: string };
  lastEventId: number | undefined;
}

export interface LimitsSlice {
  limits: Record<LimitScope, LimitsState>;
}

export type State = AppSlice & ZonesSlice & SessionsSlice & EventsSlice & LimitsSlice;

const MAX_EVENTS = 2000;
const HISTORY = 120;
const emptyLimits = (): LimitsState => ({ load: 'idle', record: null, error: null, saving: false });

export const useStore = create<State>()(() => ({
  phase: 'starting',
  phaseError: null,
  connection: null,
  serverInfo: null,
  streamState: 'connecting',
  streamError: null,
  route: { name: 'sessions' },
  toasts: [],
  zones: [],
  zonesLoad: 'idle',
  zonesError: null,
  sessions: {},
  sessionOrder: [],
  sessionsLoad: 'idle',
  sessionsError: null,
  sessionFilter: { text: '', status: '', zone: '' },
  creating: false,
  createError: null,
  speedHistory: {},
  actionPending: {},
  actionError: {},
  events: [],
  eventFilter: { sessionId: '', type: '' },
  lastEventId: undefined,
  limits: { global: emptyLimits(), client: emptyLimits(), session: emptyLimits() },
}));

const set = useStore.setState;
const get = useStore.getState;
const ops = () => getPlatform().ops;

// ---------------------------------------------------------------- app / ui actions

let toastSeq = 0;
export function toast(text: string, kind: Toast['kind'] = 'info'): void {
  const t = { id: ++toastSeq, kind, text };
  set((s) => ({ toasts: [...s.toasts.slice(-3), t] }));
  setTimeout(() => dismissToast(t.id), kind === 'error' ? 8000 : 4000);
}
export function dismissToast(id: number): void {
  set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) }));
}

export function setRoute(route: Route): void {
  set({ route });
}

/** Handles errors that concern the whole app (bad token, server gone). Returns the error. */
export function noteGlobalError(e: unknown): ApiErrorInfo {
  const err = toApiError(e);
  if (err.status === 401 && getPlatform().kind === 'web') set({ phase: 'need-token', phaseError: err });
  else if (err.status === 0 && err.code === 'network_error') set({ phase: 'unreachable', phaseError: err });
  return err;
}

/**
 * Connects: reads the connection, checks the token and the server, then loads. A `retry`
 * from the unreachable screen keeps that screen up while it tries (no flash of the
 * "connecting" screen every few seconds, no lost form input).
 */
export async function startApp(opts: { retry?: boolean } = {}): Promise<void> {
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
    await loadZones(true);
    if (get().phase !== phase) return;
    set({ phase: 'ready', phaseError: null });
    void loadServerInfo();
    void loadSessions();
  } catch (e) {
    const err = noteGlobalError(e);
    if (get().phase === phase) set({ phase: 'unreachable', phaseError: err });
  }
}

export async function submitToken(token: string): Promise<void> {
  getPlatform().setToken?.(token.trim());
  await startApp();
}

export function forgetToken(): void {
  getPlatform().setToken?.(null);
  set({ phase: 'need-token', phaseError: null });
}

export async function loadServerInfo(): Promise<void> {
  try {
    set({ serverInfo: await ops().serverInfo() });
  } catch {
    /* optional extension */
  }
}

export async function saveConnection(settings: ConnectionSettings): Promise<boolean> {
  try {
    const before = get().connection?.baseUrl;
    const connection = await ops().saveConnection(settings);
    // Another server: its sessions, events and event ids are not the old server's, so the
    // old ones go (the stream would otherwise resume after an id the new server may not reach).
    if (connection.baseUrl !== before) set({ sessions: {}, sessionOrder: [], speedHistory: {}, events: [], lastEventId: undefined });
    set({ connection });
    toast('Connection settings saved.');
    await startApp();
    return true;
  } catch (e) {
    toast(humanize(e), 'error');
    return false;
  }
}

export function setStreamState(state: StreamState, error?: ApiErrorInfo): void {
  set({ streamState: state, streamError: error ?? (state === 'open' ? null : get().streamError) });
  if (error?.status === 401) noteGlobalError(error);
}

// ---------------------------------------------------------------- zones

export async function loadZones(rethrow = false): Promise<void> {
  set({ zonesLoad: 'loading', zonesError: null });
  try {
    const { zones } = await ops().listZones();
    set({ zones, zonesLoad: 'ready' });
  } catch (e) {
    const err = noteGlobalError(e);
    set({ zonesLoad: 'error', zonesError: err });
    if (rethrow) throw e;
  }
}

// ---------------------------------------------------------------- sessions

function toView(s: Session, prev?: SessionView, now = Date.now()): SessionView {
  let up = prev?.up_speed ?? 0;
  let down = prev?.down_speed ?? 0;
  if (prev && now > prev.sampled_at) {
    const dt = (now - prev.sampled_at) / 1000;
    if (s.uploaded_bytes !== prev.uploaded_bytes || s.downloaded_bytes !== prev.downloaded_bytes || dt > 2) {
      up = Math.max(0, (s.uploaded_bytes - prev.uploaded_bytes) / dt);
      down = Math.max(0, (s.downloaded_bytes - prev.downloaded_bytes) / dt);
    }
  }
  if (s.status !== 'active' || s.paused) {
    up = 0;
    down = 0;
  }
  return { ...s, up_speed: up, down_speed: down, sampled_at: prev && s.uploaded_bytes === prev.uploaded_bytes && s.downloaded_bytes === prev.downloaded_bytes && now - prev.sampled_at < 2000 ? prev.sampled_at : now };
}

const PAGE = 500;
const MAX_PAGES = 60;
let sessionsGen = 0;

/** Loads every session (newest first), page by page; the first page shows at once. */
export async function loadSessions(): Promise<void> {
  const gen = ++sessionsGen;
  set({ sessionsLoad: 'loading', sessionsError: null });
  try {
    let cursor: string | undefined;
    const byId: Record<string, SessionView> = {};
    const order: string[] = [];
    // Sessions created meanwhile (newer than the first page's newest, not in the listing)
    // stay on top, on every page: each page replaces the list and must not drop them. The
    // older ones loaded before come back on their own pages (on top they would scramble the order).
    let newest: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const res = await ops().listSessions({ limit: PAGE, cursor });
      if (gen !== sessionsGen) return;
      const prev = get().sessions;
      const now = Date.now();
      for (const s of res.sessions) {
        if (byId[s.id]) continue;
        byId[s.id] = toView(s, prev[s.id], now);
        order.push(s.id);
      }
      if (newest === null) newest = res.sessions[0]?.created_at ?? '';
      const after = newest;
      const extra = get().sessionOrder.filter((id) => !byId[id] && prev[id] && prev[id].created_at > after);
      set({
        sessions: { ...Object.fromEntries(extra.map((id) => [id, prev[id]])), ...byId },
        sessionOrder: [...extra, ...order],
        sessionsLoad: res.next_cursor ? 'loading' : 'ready',
      });
      if (!res.next_cursor) break;
      cursor = res.next_cursor;
    }
    set({ sessionsLoad: 'ready' });
  } catch (e) {
    if (gen !== sessionsGen) return;
    set({ sessionsLoad: 'error', sessionsError: noteGlobalError(e) });
  }
}

/**
 * Picks up sessions created elsewhere (another window, the API, the CLI) and refreshes the
 * newest ones: one small request, merged into what is loaded.
 */
export async function syncNewest(): Promise<void> {
  if (get().sessionsLoad === 'loading') return;
  try {
    const res = await ops().listSessions({ limit: 100 });
    set((st) => {
      // Only what changed is written, so an idle list costs no render.
      const changed = res.sessions.filter((s) => {
        const p = st.sessions[s.id];
        return !p || p.status !== s.status || p.paused !== s.paused || p.uploaded_bytes !== s.uploaded_bytes || p.downloaded_bytes !== s.downloaded_bytes || p.duration !== s.duration;
      });
      if (!changed.length) return {};
      const sessions = { ...st.sessions };
      const fresh: string[] = [];
      for (const s of changed) {
        if (!sessions[s.id]) fresh.push(s.id);
        sessions[s.id] = toView(s, sessions[s.id]);
      }
      if (!fresh.length) return { sessions };
      // Newest first, as the server lists them (created_at is ISO 8601, so text order works).
      const order = [...fresh, ...st.sessionOrder].sort((a, b) => {
        const x = sessions[a]?.created_at ?? '';
        const y = sessions[b]?.created_at ?? '';
        return x < y ? 1 : x > y ? -1 : 0;
      });
      return { sessions, sessionOrder: order };
    });
  } catch (e) {
    noteGlobalError(e);
  }
}

/** Merges a full session into the list (newly created or refreshed). */
export function upsertSession(s: Session): void {
  set((st) => {
    const prev = st.sessions[s.id];
    const view = toView(s, prev);
    return {
      sessions: { ...st.sessions, [s.id]: view },
      sessionOrder: prev ? st.sessionOrder : [s.id, ...st.sessionOrder],
      speedHistory: pushHistory(st.speedHistory, view),
    };
  });
}

function pushHistory(h: State['speedHistory'], v: SessionView): State['speedHistory'] {
  const list = h[v.id];
  if (!list) return h; // history is kept only for sessions someone is looking at
  const next = [...list, [Date.now(), v.up_speed, v.down_speed] as [number, number, number]];
  return { ...h, [v.id]: next.slice(-HISTORY) };
}

export function watchHistory(id: string, on: boolean): void {
  set((st) => {
    const h = { ...st.speedHistory };
    if (on) h[id] = h[id] ?? [];
    else delete h[id];
    return { speedHistory: h };
  });
}

export function applyStatus(id: string, st: SessionStatusResponse): void {
  const cur = get().sessions[id];
  if (!cur) return;
  upsertSession({ ...cur, ...st });
}

/** Loads one session into the store; the error says whether it is missing or the request failed. */
export async function fetchSession(id: string): Promise<{ session: Session; error: null } | { session: null; error: ApiErrorInfo }> {
  try {
    const session = await ops().getSession(id);
    upsertSession(session);
    return { session, error: null };
  } catch (e) {
    return { session: null, error: noteGlobalError(e) };
  }
}

export async function refreshSession(id: string): Promise<Session | null> {
  return (await fetchSession(id)).session;
}

export async function pollStatus(id: string): Promise<void> {
  try {
    const st = await ops().sessionStatus(id);
    if (!get().sessions[id]) await refreshSession(id);
    applyStatus(id, st);
  } catch (e) {
    noteGlobalError(e);
  }
}

export function setSessionFilter(f: Partial<State['sessionFilter']>): void {
  set((s) => ({ sessionFilter: { ...s.sessionFilter, ...f } }));
}

export async function createSession(req: SessionCreateRequest): Promise<Session | null> {
  set({ creating: true, createError: null });
  try {
    const s = await ops().createSession(req);
    upsertSession(s);
    set({ creating: false });
    toast(`Session created for ${s.client_id}.`);
    return s;
  } catch (e) {
    set({ creating: false, createError: noteGlobalError(e) });
    return null;
  }
}

export async function setPaused(id: string, paused: boolean): Promise<void> {
  set((s) => ({ actionPending: { ...s.actionPending, [id]: true }, actionError: { ...s.actionError, [id]: null } }));
  try {
    const r = paused ? await ops().pauseSession(id) : await ops().resumeSession(id);
    const cur = get().sessions[id];
    if (cur) upsertSession({ ...cur, paused: r.paused });
    toast(r.paused ? 'Session paused: its connections were closed.' : 'Session resumed: it accepts connections again.');
    void pollStatus(id);
  } catch (e) {
    const err = noteGlobalError(e);
    set((s) => ({ actionError: { ...s.actionError, [id]: err } }));
    void refreshSession(id);
  } finally {
    set((s) => ({ actionPending: { ...s.actionPending, [id]: false } }));
  }
}

// ---------------------------------------------------------------- events (from the bridge)

const EVENT_STATUS: Partial<Record<SessionEvent['event_type'], Session['status']>> = {
  session_start: 'active',
  session_stats: undefined,
  session_heartbeat: 'active',
};

/**
 * The stream replays stored history before it goes live (the server starts from id 0 when
 * no Last-Event-ID is given). History goes to the event list only; session state comes from
 * the session list, so only recent events (30 s, allowing for clock skew) change sessions.
 */
export const LIVE_WINDOW_MS = 30_000;
export function isLive(ev: SessionEvent, now = Date.now()): boolean {
  const t = Date.parse(ev.created_at);
  return !Number.isFinite(t) || now - t < LIVE_WINDOW_MS;
}

/** Applies a batch of events: the event list, and each session's counters and status. */
export function applyEvents(batch: SessionEvent[]): void {
  if (!batch.length) return;
  const needRefresh = new Set<string>();
  set((st) => {
    const sessions = { ...st.sessions };
    let history = st.speedHistory;
    const order = st.sessionOrder;
    const now = Date.now();
    for (const ev of batch) {
      if (!isLive(ev, now)) continue;
      const cur = sessions[ev.session_id];
      if (!cur) {
        needRefresh.add(ev.session_id);
        continue;
      }
      const status = ev.event_type === 'session_end' ? cur.status : (EVENT_STATUS[ev.event_type] ?? cur.status);
      const next = toView(
        { ...cur, status, duration: ev.duration, uploaded_bytes: Math.max(cur.uploaded_bytes, ev.uploaded_bytes), downloaded_bytes: Math.max(cur.downloaded_bytes, ev.downloaded_bytes) },
        cur,
        now,
      );
      sessions[ev.session_id] = next;
      history = pushHistory(history, next);
      // A session's end changes its status to idle or ended: ask the server which.
      if (ev.event_type === 'session_end' || ev.event_type === 'session_start') needRefresh.add(ev.session_id);
    }
    const events = [...batch.slice().reverse(), ...st.events].slice(0, MAX_EVENTS);
    return { sessions, sessionOrder: order, speedHistory: history, events, lastEventId: batch[batch.length - 1].id };
  });
  // Bounded: a burst of starts and ends costs at most 20 look-ups; the periodic sync covers the rest.
  for (const id of [...needRefresh].slice(0, 20)) void refreshSession(id);
}

export function setEventFilter(f: Partial<State['eventFilter']>): void {
  set((s) => ({ eventFilter: { ...s.eventFilter, ...f } }));
}
export function clearEvents(): void {
  set({ events: [] });
}

// ---------------------------------------------------------------- limits

function setLimits(scope: LimitScope, patch: Partial<LimitsState>): void {
  set((s) => ({ limits: { ...s.limits, [scope]: { ...s.limits[scope], ...patch } } }));
}

export async function loadLimits(scope: LimitScope): Promise<void> {
  setLimits(scope, { load: 'loading', error: null });
  try {
    const record = await ops().getLimits(scope);
    setLimits(scope, { load: 'ready', record });
  } catch (e) {
    const err = noteGlobalError(e);
    if (err.code === 'limits_not_found' || (err.status === 404 && err.code !== 'not_found')) setLimits(scope, { load: 'unset', record: null });
    else if (err.status === 403) setLimits(scope, { load: 'forbidden', record: null, error: err });
    else setLimits(scope, { load: 'error', error: err });
  }
}

export async function saveLimits(scope: LimitScope, body: LimitsUpdate): Promise<boolean> {
  setLimits(scope, { saving: true, error: null });
  try {
    const record = await ops().updateLimits(scope, body);
    setLimits(scope, { load: 'ready', record, saving: false });
    toast(`${scopeTitle(scope)} limits saved.`);
    return true;
  } catch (e) {
    const err = noteGlobalError(e);
    setLimits(scope, { saving: false, error: err, ...(err.status === 403 ? { load: 'forbidden' as const } : {}) });
    return false;
  }
}

export async function deleteLimits(scope: LimitScope): Promise<void> {
  setLimits(scope, { saving: true, error: null });
  try {
    await ops().deleteLimits(scope);
    setLimits(scope, { load: 'unset', record: null, saving: false });
    toast(`${scopeTitle(scope)} limits deleted: no limits apply at this level.`);
  } catch (e) {
    const err = noteGlobalError(e);
    if (err.code === 'limits_not_found') setLimits(scope, { load: 'unset', record: null, saving: false });
    else setLimits(scope, { saving: false, error: err, ...(err.status === 403 ? { load: 'forbidden' as const } : {}) });
  }
}

export function scopeTitle(scope: LimitScope): string {
  return scope === 'global' ? 'Global' : scope === 'client' ? 'Client' : 'Session';
}

function humanize(e: unknown): string {
  return toApiError(e).message;
}
