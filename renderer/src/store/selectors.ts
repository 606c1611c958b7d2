// Named selectors: components read the store only through these.
import { useShallow } from 'zustand/react/shallow';
import type { State, SessionView } from './index.ts';
import { useStore } from './index.ts';
import { filterSessionIds, sessionTotals } from './session-view.ts';

export const selectPhase = (s: State) => s.phase;
export const selectRoute = (s: State) => s.route;
export const selectZones = (s: State) => s.zones;
export const selectToasts = (s: State) => s.toasts;
export const selectSession = (id: string) => (s: State): SessionView | undefined => s.sessions[id];

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

export const selectSubscription = (clientId: string) => (s: State) => s.subscriptions[clientId];

/** Totals for the header: active sessions and live speeds. */
export function useTotals() {
  return useStore(useShallow((s: State) => sessionTotals(s.sessions, s.sessionOrder)));
}

export { useShallow };
