// Pure merge of a batch of stream events into the store's view: the event list (newest
// first, bounded), each known session's counters, status and speed history, and which
// sessions must be asked for again. No React, no zustand: the events slice calls it, and
// test/unit/event-merge.test.ts checks it.
import type { Session, SessionEvent } from '../../../common/api-types.ts';
import { pushHistory, toView, type SessionView, type SpeedHistory } from './session-view.ts';

/** Events kept in the list (newest first). */
export const MAX_EVENTS = 2000;

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

const EVENT_STATUS: Partial<Record<SessionEvent['event_type'], Session['status']>> = {
  session_start: 'active',
  session_stats: undefined,
  session_heartbeat: 'active',
};

export interface EventMergeState {
  sessions: Record<string, SessionView>;
  speedHistory: SpeedHistory;
  events: SessionEvent[];
}

export interface EventMergeResult extends EventMergeState {
  lastEventId: number;
  /** Sessions to look up: unknown ones, and those that started or ended (idle or ended? the server knows). */
  needRefresh: string[];
}

/** Applies a non-empty batch (oldest first, as the stream delivers it). */
export function mergeEventBatch(st: EventMergeState, batch: SessionEvent[], now = Date.now()): EventMergeResult {
  const sessions = { ...st.sessions };
  let speedHistory = st.speedHistory;
  const needRefresh = new Set<string>();
  for (const ev of batch) {
    if (!isLive(ev, now)) continue;
    const cur = sessions[ev.session_id];
    if (!cur) {
      needRefresh.add(ev.session_id);
      continue;
    }
    const status = ev.event_type === 'session_end' ? cur.status : (EVENT_STATUS[ev.event_type] ?? cur.status);
    const next = toView(
      {
        ...cur,
        status,
        duration: ev.duration,
        // Counters never go back: an older event arriving late must not undo a newer listing.
        uploaded_bytes: Math.max(cur.uploaded_bytes, ev.uploaded_bytes),
        downloaded_bytes: Math.max(cur.downloaded_bytes, ev.downloaded_bytes),
      },
      cur,
      now,
    );
    sessions[ev.session_id] = next;
    speedHistory = pushHistory(speedHistory, next, now);
    // A session's end changes its status to idle or ended: ask the server which.
    if (ev.event_type === 'session_end' || ev.event_type === 'session_start') needRefresh.add(ev.session_id);
  }
  const events = [...batch.slice().reverse(), ...st.events].slice(0, MAX_EVENTS);
  return { sessions, speedHistory, events, lastEventId: batch[batch.length - 1].id, needRefresh: [...needRefresh] };
}
