// Named selectors: components read the store only through these (`useStore(selectX)`), and
// test/unit/renderer-rules.test.ts holds them to it. A selector that builds a new object or
// array is memoized or wrapped in useShallow, so it does not render again for an equal answer.
import type { LimitScope } from '../../../common/api-types.ts';
import { useShallow } from 'zustand/react/shallow';
import type { State, SessionView } from './index.ts';
import { useStore } from './index.ts';
import { filterSessionIds, sessionTotals } from './session-view.ts';

// The app: phase, connection, server, stream, route, toasts.
export const selectPhase = (s: State) => s.phase;
export const selectPhaseError = (s: State) => s.phaseError;
export const selectPlatformKind = (s: State) => s.platformKind;
export const selectConnection = (s: State) => s.connection;
export const selectBaseUrl = (s: State) => s.connection?.baseUrl;
export const selectTokenProblem = (s: State) => s.connection?.tokenProblem;
export const selectServerInfo = (s: State) => s.serverInfo;
export const selectPublicHost = (s: State) => s.serverInfo?.public_host;
/** Whom the API token in use signs in as (server-info), undefined before it answers. */
export const selectSignedInToken = (s: State) => s.serverInfo?.token;
export const selectLinkToken = (s: State) => s.linkToken;
export const selectStreamState = (s: State) => s.streamState;
export const selectStreamError = (s: State) => s.streamError;
export const selectRoute = (s: State) => s.route;
export const selectToasts = (s: State) => s.toasts;
export const selectRateLimitedUntil = (s: State) => s.rateLimitedUntil;
export const selectStaleSince = (s: State) => s.staleSince;
export const selectTheme = (s: State) => s.theme;

// Zones and the new-session form.
export const selectZones = (s: State) => s.zones;
export const selectZonesLoad = (s: State) => s.zonesLoad;
export const selectZonesError = (s: State) => s.zonesError;
export const selectCreating = (s: State) => s.creating;
export const selectCreateError = (s: State) => s.createError;

// Sessions.
export const selectSessions = (s: State) => s.sessions;
export const selectSessionOrder = (s: State) => s.sessionOrder;
export const selectSessionCount = (s: State) => s.sessionOrder.length;
export const selectSessionsMore = (s: State) => s.sessionsMore;
export const selectSessionsLoad = (s: State) => s.sessionsLoad;
export const selectSessionsError = (s: State) => s.sessionsError;
export const selectSessionFilter = (s: State) => s.sessionFilter;
export const selectSession = (id: string) => (s: State): SessionView | undefined => s.sessions[id];
/** Another active session of the same client that the store knows (the one a max_sessions refusal counts against). */
export const selectOtherActiveSession = (id: string, clientId: string) => (s: State): string | undefined =>
  Object.values(s.sessions).find((x) => x.client_id === clientId && x.id !== id && x.status === 'active')?.id;
export const selectSpeedHistory = (id: string) => (s: State) => s.speedHistory[id];
export const selectActionPending = (id: string) => (s: State) => !!s.actionPending[id];
export const selectActionError = (id: string) => (s: State) => s.actionError[id];

// Events and a session's timeline.
export const selectEvents = (s: State) => s.events;
export const selectEventFilter = (s: State) => s.eventFilter;
const NO_EVENTS: State['timelines'][string] = [];
export const selectTimeline = (id: string) => (s: State) => s.timelines[id] ?? NO_EVENTS;
/** The id of the newest event of a session's live timeline (support cards read again when it changes). */
export const selectNewestEventId = (id: string) => (s: State) => s.timelines[id]?.[0]?.id;

// Limits, subscriptions and LAN sharing.
export const selectLimits = (scope: LimitScope) => (s: State) => s.limits[scope];
export const selectLan = (s: State) => s.lan;
export const selectLanPending = (s: State) => s.lanPending;
export const selectBackupPending = (s: State) => s.backupPending;
export const selectBackupProgress = (s: State) => s.backupProgress;
export const selectBackupError = (s: State) => s.backupError;
export const selectLastBackup = (s: State) => s.lastBackup;
export const selectLastRestore = (s: State) => s.lastRestore;
export const selectAutoBackup = (s: State) => s.autoBackup;
export const selectAutoBackupPending = (s: State) => s.autoBackupPending;
export const selectLanError = (s: State) => s.lanError;

/** What a selector answers right now, for code outside rendering (effects, handlers). */
export function readStore<T>(selector: (s: State) => T): T {
  return selector(useStore.getState());
}

let memo: { sessions: State['sessions']; order: string[]; filter: State['sessionFilter']; out: string[] } | null = null;
/** Ids of the sessions that pass the filter, newest first (memoized on its inputs). */
export function selectFilteredIds(s: State): string[] {
  if (memo && memo.sessions === s.sessions && memo.order === s.sessionOrder && memo.filter === s.sessionFilter) return memo.out;
  const out = filterSessionIds(s.sessions, s.sessionOrder, s.sessionFilter);
  memo = { sessions: s.sessions, order: s.sessionOrder, filter: s.sessionFilter, out };
  return out;
}

let clientsMemo: { sessions: State['sessions']; order: string[]; out: string[] } | null = null;
/** The distinct client ids of the loaded sessions, in the order of their newest session. */
export function selectClientIds(s: State): string[] {
  if (clientsMemo && clientsMemo.sessions === s.sessions && clientsMemo.order === s.sessionOrder) return clientsMemo.out;
  const seen = new Set<string>();
  for (const id of s.sessionOrder) {
    const c = s.sessions[id]?.client_id;
    if (c) seen.add(c);
  }
  clientsMemo = { sessions: s.sessions, order: s.sessionOrder, out: [...seen] };
  return clientsMemo.out;
}

/** Ids of one client's loaded sessions, newest first. */
export function useClientSessionIds(clientId: string): string[] {
  return useStore(useShallow((s: State) => s.sessionOrder.filter((id) => s.sessions[id]?.client_id === clientId)));
}

/** The distinct client ids of the sessions `ids[first..last]` (the rows in view), in row order. */
export function useRowClients(ids: string[], first: number, last: number): string[] {
  return useStore(
    useShallow((s: State) => {
      const seen = new Set<string>();
      for (let i = Math.max(0, first); i <= last && i < ids.length; i++) {
        const c = s.sessions[ids[i]]?.client_id;
        if (c) seen.add(c);
      }
      return [...seen];
    }),
  );
}

/** A client's subscription entry; undefined while not loaded, or when there is no client. */
export const selectSubscription = (clientId: string | undefined) => (s: State) => (clientId === undefined ? undefined : s.subscriptions[clientId]);
export const selectSubscriptionPending = (clientId: string) => (s: State) => !!s.subscriptions[clientId]?.pending;

/** Totals for the header: active sessions and live speeds. */
export function useTotals() {
  return useStore(useShallow((s: State) => sessionTotals(s.sessions, s.sessionOrder)));
}

/** "customer (role)" of the token in use, from server-info, or null before it answers. */
export function useSignedInAs(): string | null {
  const token = useStore(selectSignedInToken);
  return token ? `${token.customer} (${token.role})` : null;
}

export { useShallow };

// Clients: their standing, each one's limits override and devices.
export const selectClients = (s: State) => s.clients;
export const selectClientOrder = (s: State) => s.clientOrder;
export const selectClientsLoad = (s: State) => s.clientsLoad;
export const selectClientsError = (s: State) => s.clientsError;
/** A client's record from the clients API; undefined before it answers (or without that API). */
export const selectClient = (id: string) => (s: State) => s.clients[id];
export const selectClientPending = (id: string) => (s: State) => !!s.clientPending[id];
export const selectClientError = (id: string) => (s: State) => s.clientError[id] ?? null;
export const selectOverride = (id: string) => (s: State) => s.overrides[id];
export const selectDevices = (id: string) => (s: State) => s.devices[id];
