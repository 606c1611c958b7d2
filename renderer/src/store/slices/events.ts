// The events slice: the live event list and its filter, and the last event id (the stream
// resumes after it). Batches from the bridge are merged by event-merge.ts.
import type { SessionEvent } from '../../../../common/api-types.ts';
import { mergeEventBatch } from '../event-merge.ts';
import type { SliceCreator } from '../state.ts';

export interface EventsSlice {
  events: SessionEvent[];
  eventFilter: { sessionId: string; type: string };
  lastEventId: number | undefined;
  /** Applies a batch of events: the event list, and each session's counters and status. */
  applyEvents(batch: SessionEvent[]): void;
  setEventFilter(f: Partial<EventsSlice['eventFilter']>): void;
  clearEvents(): void;
}

/** Session look-ups one batch may start; the periodic sync covers the rest. */
const MAX_REFRESH_PER_BATCH = 20;

export const createEventsSlice: SliceCreator<EventsSlice> = (set, get) => ({
  events: [],
  eventFilter: { sessionId: '', type: '' },
  lastEventId: undefined,

  applyEvents(batch) {
    if (!batch.length) return;
    let needRefresh: string[] = [];
    set((st) => {
      const { needRefresh: ids, ...merged } = mergeEventBatch(st, batch);
      needRefresh = ids;
      return merged;
    });
    // Bounded: a burst of starts and ends costs at most 20 look-ups.
    for (const id of needRefresh.slice(0, MAX_REFRESH_PER_BATCH)) void get().refreshSession(id);
  },
  setEventFilter(f) {
    set((s) => ({ eventFilter: { ...s.eventFilter, ...f } }));
  },
  clearEvents() {
    set({ events: [] });
  },
});
