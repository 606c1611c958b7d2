// The Server-Sent Events writer: replay from the event log after Last-Event-ID, then live events,
// with no gap and no duplicate; keep-alive comments; a bound on what a slow consumer buffers.
import type { ServerResponse } from 'node:http';
import type { SessionEvent } from '../contract/schemas.ts';
import type { EventFilter } from '../store/store.ts';
import type { Subscriber } from './bus.ts';

/**
 * Where a stream reads events: the stored log and the live subscription. The SQLite bus
 * (`fromLog` false) hands live events straight from publish(), so the stream replays from the
 * log itself and switches to live in one synchronous step. The PostgreSQL feed (`fromLog`
 * true, server/events/pg-feed.ts) feeds each subscriber from the log after `afterId`, in id
 * order, whoever wrote the events: the stream then just subscribes where its first batch ended.
 */
export interface EventLogSource {
  eventsAfter(customerId: string, afterId: number, filter: EventFilter, limit: number): SessionEvent[] | Promise<SessionEvent[]>;
  subscribe(sub: Subscriber & { afterId: number }): () => void;
  readonly fromLog: boolean;
}

export interface SseOptions {
  retryMs: number;
  keepAliveMs: number;
  /** Bytes a consumer may leave unread before it is disconnected (it resumes with Last-Event-ID). */
  maxBufferedBytes: number;
  replayBatch: number;
  /** Open streams one token may hold; over it the stream is refused with 429. Default 8. */
  maxStreamsPerToken?: number;
  /** Open streams one customer may hold, over all its tokens. Default 32. */
  maxStreamsPerCustomer?: number;
  /**
   * A replay that cannot write for this long (the reader stopped reading) is cut like a stalled
   * live stream; the client resumes with Last-Event-ID. Default 10000.
   */
  replayStallMs?: number;
}

export const DEFAULT_MAX_STREAMS_PER_TOKEN = 8;
export const DEFAULT_MAX_STREAMS_PER_CUSTOMER = 32;
export const DEFAULT_REPLAY_STALL_MS = 10_000;

export function frame(e: SessionEvent): string {
  return `id: ${e.id}\ndata: ${JSON.stringify(e)}\n\n`;
}

export function errorFrame(body: unknown): string {
  return `data: ${JSON.stringify(body)}\n\n`;
}

export interface StreamHandle {
  close(): void;
  /** Writes one last chunk (an error record frame) and ends the stream. */
  closeWith(chunk: string): void;
}

export interface StreamDeps {
  source: EventLogSource;
  customerId: string;
  filter: EventFilter;
  lastEventId: number;
  options: SseOptions;
  /** The first replay batch, already read by the caller (so a failing store still gets a 500 answer). */
  firstBatch?: SessionEvent[];
  /** Told of each event written live (not replayed): the delivery-lag metric. */
  onDelivered?: (e: SessionEvent) => void;
}

export function openEventStream(res: ServerResponse, headers: Record<string, string | number | string[] | undefined>, deps: StreamDeps): StreamHandle {
  const stream = new EventStream(res, deps);
  stream.open(headers);
  return { close: () => stream.close(), closeWith: (chunk) => stream.closeWith(chunk) };
}

/** One stream: its head, its replay, then its live events, until it is closed. */
class EventStream {
  private readonly res: ServerResponse;
  private readonly deps: StreamDeps;
  private lastSent: number;
  private replaying = true;
  private closed = false;
  private unsubscribe: () => void = () => {};
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(res: ServerResponse, deps: StreamDeps) {
    this.res = res;
    this.deps = deps;
    this.lastSent = deps.lastEventId;
  }

  open(headers: Record<string, string | number | string[] | undefined>): void {
    const { res, deps } = this;
    const { source, customerId, filter, options } = deps;
    res.writeHead(200, {
      ...Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${options.retryMs}\n\n`);
    // While replaying, live events are not kept: they are stored before they are published, so
    // the replay queries read them from SQLite (no unbounded in-memory queue).
    if (!source.fromLog) {
      this.unsubscribe = source.subscribe({
        customerId,
        filter,
        afterId: this.lastSent,
        deliver: (e) => {
          if (!this.replaying) this.send(e);
        },
      });
    }
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), options.keepAliveMs);
    this.keepAlive.unref();
    res.on('close', () => this.close());
    this.replay().catch(() => this.close());
  }

  private write(chunk: string, replay = false): void {
    if (this.closed) return;
    this.res.write(chunk);
    // Slow consumer: cut, it resumes by id. A replay write is not measured against the bound:
    // the replay waits for the socket after each write that fills it (so it holds at most the
    // socket's high-water mark), and a replay whose reader stalls is cut by replayStallMs.
    if (!replay && this.res.writableLength > this.deps.options.maxBufferedBytes) this.close();
  }

  private send(e: SessionEvent, replay = false): void {
    if (e.id <= this.lastSent) return;
    this.lastSent = e.id;
    this.write(frame(e), replay);
    if (!replay) this.deps.onDelivered?.(e);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    this.unsubscribe();
    this.res.destroy();
  }

  closeWith(chunk: string): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    this.unsubscribe();
    this.res.end(chunk);
    // A reader that does not take the last chunk is not waited for.
    setTimeout(() => this.res.destroy(), 1000).unref();
  }

  /**
   * Waits until the socket has taken what was written ('drain' only follows a write that
   * returned false, hence writableNeedDrain, not a byte threshold). A reader that takes
   * nothing for replayStallMs is cut.
   */
  private waitForDrain(): Promise<void> {
    const res = this.res;
    const stallMs = this.deps.options.replayStallMs ?? DEFAULT_REPLAY_STALL_MS;
    return new Promise<void>((resolve) => {
      if (this.closed || !res.writableNeedDrain) return resolve();
      const done = () => {
        clearTimeout(stall);
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      const stall = setTimeout(() => {
        this.close();
        done();
      }, stallMs);
      stall.unref();
      res.on('drain', done);
      res.on('close', done);
    });
  }

  /**
   * Replay in batches, pausing whenever the socket is full: a slow reader is waited for
   * (however many or large the stored events), what the replay holds in memory stays within
   * the socket's high-water mark, and no batch is held while waiting: the rest of a batch is
   * dropped and read again from SQLite after the wait. A reader that stalls is cut.
   * The switch to live delivery happens right after a query whose whole result was written
   * without waiting, in one synchronous step, so nothing published meanwhile falls between.
   */
  private async replay(): Promise<void> {
    const { source, customerId, filter, options } = this.deps;
    let first = this.deps.firstBatch;
    this.deps.firstBatch = undefined;
    for (;;) {
      if (this.closed) return;
      const read = first ?? source.eventsAfter(customerId, this.lastSent, filter, options.replayBatch);
      let batch: SessionEvent[] | undefined = Array.isArray(read) ? read : await read;
      first = undefined;
      const complete = batch.length < options.replayBatch;
      const full = this.writeBatch(batch);
      batch = undefined;
      if (full === undefined) return;
      // The PostgreSQL feed replays on its own: once the socket has room, it takes over from lastSent.
      if (source.fromLog) {
        if (full) await this.waitForDrain();
        break;
      }
      if (full) {
        await this.waitForDrain();
        continue;
      }
      if (complete) break;
    }
    this.replaying = false;
    if (source.fromLog && !this.closed) this.unsubscribe = source.subscribe({ customerId, filter, afterId: this.lastSent, deliver: (e) => this.send(e) });
  }

  /** Writes a replayed batch until the socket is full: whether it filled; undefined when the stream closed. */
  private writeBatch(batch: SessionEvent[]): boolean | undefined {
    for (const e of batch) {
      this.send(e, true);
      if (this.closed) return undefined;
      if (this.res.writableNeedDrain) return true;
    }
    return false;
  }
}
