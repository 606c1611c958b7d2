// Event publisher: every event is persisted first (it gets its id from SQLite), then
// handed to the live subscribers of the same customer whose filters match.
import type { SessionEvent } from '../contract/schemas.ts';
import { eventInsert, type EventInput } from '../domain.ts';
import type { EventFilter, Store } from '../store/store.ts';
import { isoNow } from '../time.ts';

export interface Subscriber {
  customerId: string;
  filter: EventFilter;
  deliver(e: SessionEvent): void;
}

export type PublishInput = EventInput;

export function matches(filter: EventFilter, e: SessionEvent): boolean {
  if (filter.sessionIds?.length && !filter.sessionIds.includes(e.session_id)) return false;
  if (filter.types?.length && !filter.types.includes(e.event_type)) return false;
  return true;
}

export class EventBus {
  private readonly store: Store;
  private readonly subscribers = new Set<Subscriber>();

  constructor(store: Store) {
    this.store = store;
  }

  publish(input: PublishInput): SessionEvent {
    const event = this.store.insertEvent(eventInsert(input, isoNow()));
    this.fanOut(input.customerId, event);
    return event;
  }

  /** Hands an event already stored (by publish, or in a node report's transaction) to the live subscribers. */
  fanOut(customerId: string, event: SessionEvent): void {
    for (const sub of this.subscribers) {
      if (sub.customerId === customerId && matches(sub.filter, event)) sub.deliver(event);
    }
  }

  subscribe(sub: Subscriber): () => void {
    this.subscribers.add(sub);
    return () => this.subscribers.delete(sub);
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }
}
