// Named selectors: components read the store only through these.
import { useShallow } from 'zustand/react/shallow';
import type { State, SessionView } from './index.ts';
import { useStore } from './index.ts';

export const selectPhase = (s: State) => s.phase;
export const selectRoute = (s: State) => s.route;
export const selectZones = (s: State) => s.zones;
export const selectToasts = (s: State) => s.toasts;
export const selectSession = (id: string) => (s: State): SessionView | undefined => s.sessions[id];

let memo: { sessions: State['sessions']; order: string[]; filter: State['sessionFilter']; out: string[] } | null = null;
/** Ids of the sessions that pass the filter, newest first (memoized on its inputs). */
export function selectFilteredIds(s: State): string[] {
  if (memo && memo.sessions === s.sessions && memo.order === s.sessionOrder && memo.filter === s.sessionFilter) return memo.out;
  const { text, status, zone } = s.sessionFilter;
  const q = text.trim().toLowerCase();
  let out = s.sessionOrder;
  if (q || status || zone) {
    out = s.sessionOrder.filter((id) => {
      const v = s.sessions[id];
      if (!v) return false;
      if (status === 'paused' ? !v.paused : status && v.status !== status) return false;
      if (zone && v.zone !== zone) return false;
      if (q && !v.client_id.toLowerCase().includes(q) && !v.id.startsWith(q)) return false;
      return true;
    });
  }
  memo = { sessions: s.sessions, order: s.sessionOrder, filter: s.sessionFilter, out };
  return out;
}

/** Totals for the header: active sessions and live speeds. */
export function useTotals() {
  return useStore(
    useShallow((s: State) => {
      let active = 0;
      let up = 0;
      let down = 0;
      for (const id of s.sessionOrder) {
        const v = s.sessions[id];
        if (v?.status === 'active' && !v.paused) {
          active++;
          up += v.up_speed;
          down += v.down_speed;
        }
      }
      return { active, up, down, total: s.sessionOrder.length };
    }),
  );
}

export { useShallow };
