// The events slice: the live event list and its filter, and the last event id (the stream
// resumes after it). Batches from the bridge are merged by event-merge.ts.
import type { EventsSlice, SliceCreator } from '../state.ts';
import type { SessionEvent } from '../../../../common/api-types.ts';
import { Coalescer } from '../../../../common/coalescer.ts';
import { mergeEventBatch } from '../event-merge.ts';

/**
 * Session look-ups the events ask for: each session at most every 2 s, all together at most 2 a
 * second (120 a minute). With the tray's own (main/notifier.ts, likewise), the status poll of an
 * open session (60 a minute) and the list sync (12 a minute), the window and tray stay well under
 * the token's 600 requests per 60 s however busy the server is (test/e2e/churn.spec.ts).
 */
const LOOKUPS = { perIdMs: 2000, perSecond: 2 };

/** The events list's filters when none is set (the start, and what `Show every event` returns to). */
export const NO_EVENT_FILTER: Readonly<EventsSlice['eventFilter']> = Object.freeze({ sessionId: '', type: '' });

export const createEventsSlice: SliceCreator<EventsSlice> = (set, get) => {
  const lookups = new Coalescer((id) => get().refreshSession(id), LOOKUPS);
  return {
    events: [],
    eventFilter: NO_EVENT_FILTER,
    lastEventId: undefined,

    applyEvents(batch) {
      if (!batch.length) return;
      let needRefresh: string[] = [];
      set((st) => {
        const { needRefresh: ids, ...merged } = mergeEventBatch(st, batch);
        needRefresh = ids;
        return merged;
      });
      // Coalesced: a burst of starts and ends costs a bounded number of look-ups.
      for (const id of needRefresh) lookups.request(id);
    },
    setEventFilter(f) {
      set((s) => ({ eventFilter: { ...s.eventFilter, ...f } }));
    },
    clearEvents() {
      set({ events: [] });
    },
  };
};
