// The sessions slice: every session as a row (session-view.ts builds them), newest first,
// with the list filter, the create form's state, per-session pause/resume state and the
// speed history of the sessions someone is looking at.
import { addListingPage, mergeNewest, pushHistory, toView, watchHistoryOf, type SessionFilter, type SessionView } from '../session-view.ts';
import { ops, type SessionsSlice, type SliceCreator } from '../state.ts';

/** The sessions list's filters when none is set (the start, and what `Show every session` returns to). */
export const NO_SESSION_FILTER: Readonly<SessionFilter> = Object.freeze({ text: '', status: '', zone: '' });

const PAGE = 500;
/** Pages loadSessions reads at once (10,000 sessions); older pages come on demand (loadMoreSessions). */
const MAX_PAGES = 20;

type ActionsPart = Pick<
  SessionsSlice,
  'creating' | 'createError' | 'actionPending' | 'actionError' | 'fetchSession' | 'refreshSession' | 'pollStatus' | 'createSession' | 'setPaused'
>;

/** The listing: the newest MAX_PAGES pages at once, then a page at a time on demand. */
const createListing: SliceCreator<Pick<SessionsSlice, 'sessionsMore' | 'loadSessions' | 'loadMoreSessions'>> = (set, get) => {
  // A newer loadSessions makes the pages of an older one stale.
  let generation = 0;
  // Where the listing stopped (the next page's cursor) and what it gathered, for loadMoreSessions.
  let rest: { gen: number; cursor: string; acc: { byId: Record<string, SessionView>; order: string[] }; newest: string } | null = null;
  return {
    sessionsMore: false,
    async loadSessions() {
      const gen = ++generation;
      rest = null;
      set({ sessionsLoad: 'loading', sessionsError: null });
      try {
        let cursor: string | undefined;
        const acc = { byId: {} as Record<string, SessionView>, order: [] as string[] };
        let newest: string | null = null;
        for (let page = 0; page < MAX_PAGES; page++) {
          const res = await ops().listSessions({ limit: PAGE, cursor });
          if (gen !== generation) return;
          if (newest === null) newest = res.sessions[0]?.created_at ?? '';
          cursor = res.next_cursor ?? undefined;
          set({ ...addListingPage(acc, res.sessions, get(), newest), sessionsLoad: cursor && page + 1 < MAX_PAGES ? 'loading' : 'ready', sessionsMore: Boolean(cursor) });
          if (!cursor) break;
        }
        if (cursor) rest = { gen, cursor, acc, newest: newest ?? '' };
        set({ sessionsLoad: 'ready' });
      } catch (e) {
        if (gen !== generation) return;
        set({ sessionsLoad: 'error', sessionsError: get().noteGlobalError(e) });
      }
    },
    async loadMoreSessions() {
      const from = rest;
      if (!from || from.gen !== generation || get().sessionsLoad === 'loading') return;
      rest = null;
      set({ sessionsLoad: 'loading', sessionsError: null });
      try {
        const res = await ops().listSessions({ limit: PAGE, cursor: from.cursor });
        if (from.gen !== generation) return;
        if (res.next_cursor) rest = { ...from, cursor: res.next_cursor };
        set({ ...addListingPage(from.acc, res.sessions, get(), from.newest), sessionsLoad: 'ready', sessionsMore: Boolean(res.next_cursor) });
      } catch (e) {
        if (from.gen !== generation) return;
        rest = from;
        set({ sessionsLoad: 'error', sessionsError: get().noteGlobalError(e) });
      }
    },
  };
};

const createListPart: SliceCreator<Omit<SessionsSlice, keyof ActionsPart>> = (set, get, store) => {
  // The pollers wait while the server's Retry-After runs.
  const rateLimited = () => (get().rateLimitedUntil ?? 0) > Date.now();
  return {
    sessions: {},
    sessionOrder: [],
    sessionsLoad: 'idle',
    sessionsError: null,
    sessionFilter: NO_SESSION_FILTER,
    speedHistory: {},
    ...createListing(set, get, store),
    async syncNewest() {
      if (get().sessionsLoad === 'loading' || rateLimited()) return;
      try {
        const res = await ops().listSessions({ limit: 100 });
        set((st) => mergeNewest(st, res.sessions) ?? {});
      } catch (e) {
        get().noteGlobalError(e);
      }
    },
    upsertSession(s) {
      set((st) => {
        const prev = st.sessions[s.id];
        const view = toView(s, prev);
        return {
          sessions: { ...st.sessions, [s.id]: view },
          sessionOrder: prev ? st.sessionOrder : [s.id, ...st.sessionOrder],
          speedHistory: pushHistory(st.speedHistory, view),
        };
      });
    },
    watchHistory(id, on) {
      set((st) => ({ speedHistory: watchHistoryOf(st.speedHistory, id, on) }));
    },
    applyStatus(id, st) {
      const cur = get().sessions[id];
      if (!cur) return;
      // A quota that renewed is absent from the answer: drop the old fields first.
      get().upsertSession({ ...cur, over_quota: undefined, over_quota_until: undefined, ...st });
    },
    setSessionFilter(f) {
      set((s) => ({ sessionFilter: { ...s.sessionFilter, ...f } }));
    },
  };
};

/** One session's reads and actions: load, poll, create, pause and resume. */
const createActionsPart: SliceCreator<ActionsPart> = (set, get) => {
  // The poller waits while the server's Retry-After runs.
  const rateLimited = () => (get().rateLimitedUntil ?? 0) > Date.now();
  return {
    creating: false,
    createError: null,
    actionPending: {},
    actionError: {},

    async fetchSession(id) {
      try {
        const session = await ops().getSession(id);
        get().upsertSession(session);
        return { session, error: null };
      } catch (e) {
        return { session: null, error: get().noteGlobalError(e) };
      }
    },
    async refreshSession(id) {
      return (await get().fetchSession(id)).session;
    },
    async pollStatus(id) {
      if (rateLimited()) return;
      try {
        const st = await ops().sessionStatus(id);
        if (!get().sessions[id]) await get().refreshSession(id);
        get().applyStatus(id, st);
      } catch (e) {
        get().noteGlobalError(e);
      }
    },
    async createSession(req) {
      set({ creating: true, createError: null });
      try {
        const s = await ops().createSession(req);
        get().upsertSession(s);
        set({ creating: false });
        get().toast(`Session created for ${s.client_id}.`);
        return s;
      } catch (e) {
        set({ creating: false, createError: get().noteGlobalError(e) });
        return null;
      }
    },
    async setPaused(id, paused) {
      set((s) => ({ actionPending: { ...s.actionPending, [id]: true }, actionError: { ...s.actionError, [id]: null } }));
      try {
        const r = paused ? await ops().pauseSession(id) : await ops().resumeSession(id);
        const cur = get().sessions[id];
        if (cur) get().upsertSession({ ...cur, paused: r.paused });
        get().toast(r.paused ? 'Session paused: its connections were closed.' : 'Session resumed: it accepts connections again.');
        void get().pollStatus(id);
      } catch (e) {
        const err = get().noteGlobalError(e);
        set((s) => ({ actionError: { ...s.actionError, [id]: err } }));
        void get().refreshSession(id);
      } finally {
        set((s) => ({ actionPending: { ...s.actionPending, [id]: false } }));
      }
    },
  };
};

export const createSessionsSlice: SliceCreator<SessionsSlice> = (...a) => ({ ...createListPart(...a), ...createActionsPart(...a) });
