// The history slice: what has happened to a session or a client. The live timeline of each
// session someone watches (its own filtered event stream, batched like the bridge's), and the
// reads the charts and the audit trail keep in their own state: usage history and audit pages.
import { getPlatform } from '../../platform/index.ts';
import type { SessionEvent } from '../../../../common/api-types.ts';
import { batcher } from '../batcher.ts';
import { ops, type HistorySlice, type SliceCreator } from '../state.ts';

/** Newest events kept per timeline. */
const TIMELINE_MAX = 500;
/** A timeline renders at most once per this many ms while events stream in. */
const TIMELINE_BATCH_MS = 100;

export const createHistorySlice: SliceCreator<HistorySlice> = (set) => {
  const setTimeline = (id: string, events: SessionEvent[] | null) =>
    set((s) => {
      const timelines = { ...s.timelines };
      if (events) timelines[id] = events;
      else delete timelines[id];
      return { timelines };
    });

  return {
    timelines: {},

    watchTimeline(id) {
      setTimeline(id, []);
      // The session's newest stored events (the stream's tail; replaying from id 0 would send a
      // long-lived session's whole history to keep 500), then live ones, newest first.
      const batch = batcher<SessionEvent>(TIMELINE_BATCH_MS, (events) =>
        set((s) => ({ timelines: { ...s.timelines, [id]: [...events.reverse(), ...(s.timelines[id] ?? [])].slice(0, TIMELINE_MAX) } })),
      );
      const unsubscribe = getPlatform().subscribe({ session_id: [id] }, { onEvent: (ev) => batch.push(ev) });
      return () => {
        unsubscribe();
        batch.cancel();
        setTimeline(id, null);
      };
    },

    loadUsage: (query) => ops().usage(query),
    listAudit: (query) => ops().listAudit(query),
  };
};
