// Event publisher: every event is persisted first (it gets its id from SQLite), then
// handed to the live subscribers of the same customer whose filters match. The data plane's
// events that a full disk refused wait in memory and are stored in order once it takes writes.
import type { SessionEvent } from '../contract/schemas.ts';
import { eventInsert, type EventInput, type EventInsert, type Logger } from '../domain.ts';
import { silentLogger, throttledLine } from '../log.ts';
import { DatabaseUnwritable } from '../store/sql/unwritable.ts';
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

/** Events kept while the database cannot be written; past it the oldest go (said in the log). */
export const MAX_KEPT_EVENTS = 10_000;
/** How often kept events are tried again. */
const RETRY_MS = 1000;

export class EventBus {
  private readonly store: Store;
  private readonly subscribers = new Set<Subscriber>();
  private readonly log: Logger;
  /** The data plane's events the database refused (a full disk), in order, each with its own time. */
  private readonly kept: { customerId: string; row: EventInsert }[] = [];
  private retry: NodeJS.Timeout | undefined;
  private readonly dropLine = throttledLine(10_000);

  constructor(store: Store, log: Logger = silentLogger) {
    this.store = store;
    this.log = log;
  }

  publish(input: PublishInput): SessionEvent {
    const event = this.store.insertEvent(eventInsert(input, isoNow()));
    this.fanOut(input.customerId, event);
    return event;
  }

  /**
   * The data plane's publish: when the database cannot be written (DatabaseUnwritable) the event is
   * kept, and stored with its own time, after those kept before it, once writes work again.
   */
  publishOrKeep(input: PublishInput): void {
    const row = eventInsert(input, isoNow());
    if (this.kept.length === 0) {
      try {
        this.fanOut(input.customerId, this.store.insertEvent(row));
        return;
      } catch (err) {
        if (!(err instanceof DatabaseUnwritable)) throw err;
      }
    }
    if (this.kept.length >= MAX_KEPT_EVENTS) {
      this.kept.shift();
      this.dropLine((alike) => this.log.warn({ ...alike }, `more than ${MAX_KEPT_EVENTS} session events wait for the database to take writes; the oldest is dropped`));
    }
    this.kept.push({ customerId: input.customerId, row });
    this.retry ??= setInterval(() => this.storeKept(), RETRY_MS).unref();
  }

  /** Stores the kept events in order until the database refuses one again. */
  private storeKept(): void {
    while (this.kept.length) {
      const { customerId, row } = this.kept[0];
      try {
        this.fanOut(customerId, this.store.insertEvent(row));
      } catch (err) {
        if (err instanceof DatabaseUnwritable) return;
        this.log.error({ err: String(err) }, 'storing a kept session event failed; it is dropped');
      }
      this.kept.shift();
    }
    clearInterval(this.retry);
    this.retry = undefined;
  }

  /** How many events wait for the database. */
  get keptCount(): number {
    return this.kept.length;
  }

  /** Stops retrying (the store is closing): one last try first; what is still refused is said. */
  close(): void {
    if (this.retry) this.storeKept();
    clearInterval(this.retry);
    this.retry = undefined;
    if (this.kept.length) this.log.error({ events: this.kept.length }, 'session events the database refused could not be stored before shutdown');
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
