// The event publisher of the PostgreSQL control plane, the cluster's counterpart of EventBus
// (bus.ts). Events written by any instance reach the subscribers of every
// instance, once each, in increasing id order, with none skipped.
//
// Subscribers are never handed an event straight from a publish() call: each keeps a cursor
// (the last id it was given) and is fed only by reading the log `id > cursor` in id order.
// A local publish, a NOTIFY from another instance, a reconnection of the LISTEN connection and
// a slow safety poll all just wake that read. Because event ids become visible strictly in
// order (see store.ts), reading `id > cursor` can never step over an event that appears later,
// so a subscriber sees every event exactly once however the wake-ups interleave or get lost.
import type { SessionEvent } from '../contract/schemas.ts';
import type { PgListener } from '../store/pg/listener.ts';
import { CHANNELS, type EventFilter, type PgStore } from '../store/pg/store.ts';
import { eventInsert } from '../domain.ts';
import { isoNow } from '../time.ts';
import { matches, type PublishInput } from './bus.ts';

export interface FeedSubscriber {
  customerId: string;
  filter: EventFilter;
  /** Deliver events with ids above this one (the stream's Last-Event-ID, or the log's end). */
  afterId: number;
  deliver(e: SessionEvent): void;
}

export interface EventFeedOptions {
  /** Rows read per query while catching up. */
  batch?: number;
  /** Safety poll, in case a wake-up was lost; notifications make it rarely useful. */
  pollMs?: number;
  onError?: (err: unknown) => void;
}

interface Cursor {
  sub: FeedSubscriber;
  last: number;
}

export class PgEventFeed {
  private readonly store: PgStore;
  private readonly batch: number;
  private readonly onError: (err: unknown) => void;
  private readonly byCustomer = new Map<string, Set<Cursor>>();
  /** Customers whose pump runs, and those woken again while it ran. */
  private readonly pumping = new Map<string, Promise<void>>();
  private readonly dirty = new Set<string>();
  private readonly unlisten: (() => void)[] = [];
  private readonly poll: NodeJS.Timeout;
  private closed = false;

  constructor(store: PgStore, listener: PgListener | null, opts: EventFeedOptions = {}) {
    this.store = store;
    this.batch = opts.batch ?? 500;
    this.onError = opts.onError ?? (() => {});
    if (listener) {
      this.unlisten.push(
        listener.onNotification((channel, payload) => {
          if (channel !== CHANNELS.events) return;
          const customerId = payload.slice(0, payload.lastIndexOf(':'));
          if (this.byCustomer.has(customerId)) this.wake(customerId);
        }),
        listener.onReconnect(() => this.wakeAll()),
      );
    }
    this.poll = setInterval(() => this.wakeAll(), opts.pollMs ?? 2_000);
    this.poll.unref();
  }

  /** Persists the event (it gets its id from the cluster-wide counter), then wakes the readers. */
  async publish(input: PublishInput): Promise<SessionEvent> {
    const event = await this.store.insertEvent(eventInsert(input, isoNow()));
    if (this.byCustomer.has(input.customerId)) this.wake(input.customerId);
    return event;
  }

  /** Starts delivering the customer's matching events after `sub.afterId`; returns the unsubscribe. */
  subscribe(sub: FeedSubscriber): () => void {
    const cursor: Cursor = { sub, last: sub.afterId };
    let set = this.byCustomer.get(sub.customerId);
    if (!set) this.byCustomer.set(sub.customerId, (set = new Set()));
    set.add(cursor);
    this.wake(sub.customerId);
    return () => {
      const s = this.byCustomer.get(sub.customerId);
      if (!s) return;
      s.delete(cursor);
      if (s.size === 0) this.byCustomer.delete(sub.customerId);
    };
  }

  get subscriberCount(): number {
    let n = 0;
    for (const s of this.byCustomer.values()) n += s.size;
    return n;
  }

  /** Resolves once every pump started so far has finished (tests use it to settle). */
  async idle(): Promise<void> {
    while (this.pumping.size > 0) await Promise.all([...this.pumping.values()]);
  }

  private wakeAll(): void {
    for (const customerId of this.byCustomer.keys()) this.wake(customerId);
  }

  /** One pump per customer at a time; a wake-up during a pump makes it read once more. */
  private wake(customerId: string): void {
    if (this.closed) return;
    if (this.pumping.has(customerId)) {
      this.dirty.add(customerId);
      return;
    }
    const run = (async () => {
      try {
        do {
          this.dirty.delete(customerId);
          await this.pump(customerId);
        } while (this.dirty.has(customerId) && !this.closed);
      } catch (err) {
        // The database is away: the next wake-up (poll, reconnection, notification) retries.
        this.onError(err);
      } finally {
        this.pumping.delete(customerId);
      }
    })();
    this.pumping.set(customerId, run);
  }

  /** Reads the customer's log from the lowest cursor and hands each subscriber what is after its own. */
  private async pump(customerId: string): Promise<void> {
    for (;;) {
      const cursors = this.byCustomer.get(customerId);
      if (!cursors || cursors.size === 0) return;
      let from = Infinity;
      for (const c of cursors) from = Math.min(from, c.last);
      const events = await this.store.eventsAfter(customerId, from, {}, this.batch);
      for (const e of events) {
        for (const c of this.byCustomer.get(customerId) ?? []) {
          if (e.id <= c.last) continue;
          c.last = e.id;
          if (matches(c.sub.filter, e)) c.sub.deliver(e);
        }
      }
      if (events.length < this.batch) return;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poll);
    for (const off of this.unlisten) off();
    await this.idle();
  }
}
