// Pure view logic of the session list: a session becomes a row with live speeds, rows are
// merged from listing pages and from the newest-sessions sync, the detail chart keeps a short
// speed history, and the list is filtered and totalled for the header. No React, no zustand,
// no platform: the store's slices call these, and test/unit/session-view.test.ts checks them.
import type { Session } from '../../../common/api-types.ts';

export interface SessionView extends Session {
  /** Bytes per second, measured between the last two counter updates. */
  up_speed: number;
  down_speed: number;
  /** ms timestamp of the last counter update (for speeds and staleness). */
  sampled_at: number;
}

/** Per-session speed history for the detail chart: [t, up, down]. Kept only for watched sessions. */
export type SpeedHistory = Record<string, Array<[number, number, number]>>;

export interface SessionFilter {
  text: string;
  status: string;
  zone: string;
}

/** Samples kept per watched session (one a counter update: about two minutes). */
export const HISTORY = 120;

/**
 * The row of a session. Speeds come from the counters' change since the previous row's sample;
 * unchanged counters keep the old speed for 2 s (updates arrive about once a second), then
 * count as zero. A session that is not active, or paused, moves nothing.
 */
export function toView(s: Session, prev?: SessionView, now = Date.now()): SessionView {
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
  const unchanged = prev && s.uploaded_bytes === prev.uploaded_bytes && s.downloaded_bytes === prev.downloaded_bytes && now - prev.sampled_at < 2000;
  return { ...s, up_speed: up, down_speed: down, sampled_at: unchanged ? prev.sampled_at : now };
}

/** Adds a row's speeds to its history when someone watches it; the same object otherwise. */
export function pushHistory(h: SpeedHistory, v: SessionView, now = Date.now()): SpeedHistory {
  const list = h[v.id];
  if (!list) return h; // history is kept only for sessions someone is looking at
  const next = [...list, [now, v.up_speed, v.down_speed] as [number, number, number]];
  return { ...h, [v.id]: next.slice(-HISTORY) };
}

/** Starts (keeping what is there) or stops keeping the history of one session. */
export function watchHistoryOf(h: SpeedHistory, id: string, on: boolean): SpeedHistory {
  const next = { ...h };
  if (on) next[id] = next[id] ?? [];
  else delete next[id];
  return next;
}

/** Newest first, as the server lists them (created_at is ISO 8601, so text order works). */
export function newestFirst(sessions: Record<string, SessionView>): (a: string, b: string) => number {
  return (a, b) => {
    const x = sessions[a]?.created_at ?? '';
    const y = sessions[b]?.created_at ?? '';
    return x < y ? 1 : x > y ? -1 : 0;
  };
}

/**
 * One page of the full listing, added to what the earlier pages built (`acc`, extended in
 * place). Returns the list to show: sessions created meanwhile (newer than `newest`, the first
 * page's newest, and not in the listing) stay on top, on every page; the older ones loaded
 * before come back on their own pages (on top they would scramble the order).
 */
export function addListingPage(
  acc: { byId: Record<string, SessionView>; order: string[] },
  page: Session[],
  shown: { sessions: Record<string, SessionView>; sessionOrder: string[] },
  newest: string,
  now = Date.now(),
): { sessions: Record<string, SessionView>; sessionOrder: string[] } {
  const prev = shown.sessions;
  for (const s of page) {
    if (acc.byId[s.id]) continue;
    acc.byId[s.id] = toView(s, prev[s.id], now);
    acc.order.push(s.id);
  }
  const extra = shown.sessionOrder.filter((id) => !acc.byId[id] && prev[id] && prev[id].created_at > newest);
  return {
    sessions: { ...Object.fromEntries(extra.map((id) => [id, prev[id]])), ...acc.byId },
    sessionOrder: [...extra, ...acc.order],
  };
}

/**
 * Merges the newest sessions (one small listing) into the shown list. Only what changed is
 * written, so an idle list costs no render: null when nothing changed.
 */
export function mergeNewest(
  shown: { sessions: Record<string, SessionView>; sessionOrder: string[] },
  listed: Session[],
  now = Date.now(),
): { sessions: Record<string, SessionView>; sessionOrder?: string[] } | null {
  const changed = listed.filter((s) => {
    const p = shown.sessions[s.id];
    return (
      !p ||
      p.status !== s.status ||
      p.paused !== s.paused ||
      p.uploaded_bytes !== s.uploaded_bytes ||
      p.downloaded_bytes !== s.downloaded_bytes ||
      p.duration !== s.duration ||
      !!p.over_quota !== !!s.over_quota ||
      p.over_quota_until !== s.over_quota_until ||
      p.expires_at !== s.expires_at
    );
  });
  if (!changed.length) return null;
  const sessions = { ...shown.sessions };
  const fresh: string[] = [];
  for (const s of changed) {
    if (!sessions[s.id]) fresh.push(s.id);
    sessions[s.id] = toView(s, sessions[s.id], now);
  }
  if (!fresh.length) return { sessions };
  return { sessions, sessionOrder: [...fresh, ...shown.sessionOrder].sort(newestFirst(sessions)) };
}

/** Ids of the sessions that pass the filter, in list order (the same array when no filter is set). */
export function filterSessionIds(sessions: Record<string, SessionView>, order: string[], filter: SessionFilter): string[] {
  const { text, status, zone } = filter;
  const q = text.trim().toLowerCase();
  if (!q && !status && !zone) return order;
  return order.filter((id) => {
    const v = sessions[id];
    if (!v) return false;
    if (status === 'paused' ? !v.paused : status === 'over_quota' ? !v.over_quota : status && v.status !== status) return false;
    if (zone && v.zone !== zone) return false;
    if (q && !v.client_id.toLowerCase().includes(q) && !v.id.startsWith(q)) return false;
    return true;
  });
}

/** Totals for the header: active (and not paused) sessions, their summed speeds, and all rows. */
export function sessionTotals(sessions: Record<string, SessionView>, order: string[]): { active: number; up: number; down: number; total: number } {
  let active = 0;
  let up = 0;
  let down = 0;
  for (const id of order) {
    const v = sessions[id];
    if (v?.status === 'active' && !v.paused) {
      active++;
      up += v.up_speed;
      down += v.down_speed;
    }
  }
  return { active, up, down, total: order.length };
}
