// One dedicated PostgreSQL connection per process LISTENs on the control plane's channels (CHANNELS
// in store.ts) and hands each notification to local subscribers: event, pause, limit, token and node
// changes made by other instances. Notifications sent while it is down are lost (PostgreSQL keeps no
// backlog), so after each reconnection `onReconnect` handlers re-read the tables, which are the truth.
// A silent break (a network cut: no reset reaches either side) would only surface when TCP gives up,
// hours later, so a heartbeat (a round trip) runs every heartbeatMs; one unanswered for three of those
// reconnects, so `connected` is false within seconds of a silent break (the read cache relies on it).
import pg from 'pg';
import { clientConfig, type PoolOptions } from './pool.ts';

/** A notification: its channel, payload, and the process id of the backend whose statement sent it. */
export type NotificationHandler = (channel: string, payload: string, processId: number) => void;

export interface ListenerOptions extends PoolOptions {
  /** First delay before reconnecting; doubles up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** How often the heartbeat runs (1 s; 0: none); unanswered for 3 of these: the connection is given up. */
  heartbeatMs?: number;
  onError?: (err: Error) => void;
}

/**
 * The round trip of fences and heartbeats: an empty query, answered EmptyQueryResponse then
 * ReadyForQuery, before which the backend sends pending notifications as after any statement. Half
 * the database's CPU of a `SELECT 1` (no plan, no row) and less parsing here: under cached status
 * reads 2-4 against 3.5-6.4 µs of PostgreSQL CPU a request, and 5-38 % more requests a second.
 */
const EMPTY = '';

/** The least time between the beginnings of two fences (sync). */
const FENCE_GAP_MS = 1;

export class PgListener {
  private readonly url: string;
  private readonly channels: string[];
  private readonly opts: ListenerOptions;
  private readonly handlers = new Set<NotificationHandler>();
  private readonly reconnectHandlers = new Set<() => void>();
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private beat: NodeJS.Timeout | undefined;
  private backoff: number;
  private nextFence: Promise<boolean> | undefined;
  private fenceInFlight: Promise<boolean> | undefined;
  private fenceBegan = -Infinity;
  /** Fences begun (sync's round trips), for tests and diagnostics. */
  fences = 0;
  private closed = false;
  private connectedOnce = false;
  /** Resolves when the first LISTEN is in place (never, if close() comes first). */
  readonly ready: Promise<void>;
  private markReady!: () => void;

  constructor(url: string, channels: string[], opts: ListenerOptions = {}) {
    this.url = url;
    this.channels = channels;
    this.opts = opts;
    this.backoff = opts.minBackoffMs ?? 100;
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    void this.connect();
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  onNotification(fn: NotificationHandler): () => void {
    this.handlers.add(fn);
    return () => this.handlers.delete(fn);
  }

  /**
   * Resolves true once a round trip on the LISTEN connection, begun after this call, is back. PostgreSQL
   * delivers a session's pending notifications before it answers a statement, and a transaction signals
   * listeners before its COMMIT is answered, so by then the handlers have seen every transaction
   * committed before this call. Calls share the next round trip until it begins: once the previous one
   * is back and at least FENCE_GAP_MS after it began (a few fences a millisecond would cost the database
   * more than the reads they spare). False when the connection is down, fails or is replaced meanwhile,
   * or after timeoutMs (the caller reads the database instead).
   */
  sync(timeoutMs = 500): Promise<boolean> {
    this.nextFence ??= this.beginFence(timeoutMs);
    return this.nextFence;
  }

  private async beginFence(timeoutMs: number): Promise<boolean> {
    await this.fenceInFlight;
    const wait = this.fenceBegan + FENCE_GAP_MS - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // From here on, a caller needs a later fence: this one may not have seen its writers' commits.
    this.nextFence = undefined;
    this.fenceBegan = performance.now();
    this.fences++;
    this.fenceInFlight = this.roundTrip(timeoutMs);
    return this.fenceInFlight;
  }

  private roundTrip(timeoutMs: number): Promise<boolean> {
    const client = this.client;
    if (!client) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs).unref();
      const done = (ok: boolean) => {
        clearTimeout(timer);
        resolve(ok && this.client === client);
      };
      client.query(EMPTY).then(() => done(true), () => done(false));
    });
  }

  /** Called after each reconnection (not the first connection): notifications may have been missed. */
  onReconnect(fn: () => void): () => void {
    this.reconnectHandlers.add(fn);
    return () => this.reconnectHandlers.delete(fn);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(clientConfig(this.url, this.opts));
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      if (this.client === client) {
        this.client = undefined;
        clearInterval(this.beat);
      }
      client.removeAllListeners('notification');
      client.end().catch(() => {});
      if (!this.closed) {
        this.opts.onError?.(err);
        this.schedule();
      }
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('LISTEN connection ended')));
    client.on('notification', (n) => {
      for (const fn of this.handlers) fn(n.channel, n.payload ?? '', n.processId);
    });
    try {
      await client.connect();
      for (const ch of this.channels) await client.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
    } catch (err) {
      fail(err as Error);
    }
    if (this.closed) fail(new Error('LISTEN connection closed'));
    if (failed) return;
    this.client = client;
    this.heartbeat(client, fail);
    this.backoff = this.opts.minBackoffMs ?? 100;
    if (this.connectedOnce) {
      for (const fn of this.reconnectHandlers) fn();
    }
    this.connectedOnce = true;
    this.markReady();
  }

  /** A round trip every heartbeatMs; `fail` when one has waited three of them. */
  private heartbeat(client: pg.Client, fail: (err: Error) => void): void {
    const every = this.opts.heartbeatMs ?? 1_000;
    let sent = 0;
    clearInterval(this.beat);
    if (every <= 0) return;
    this.beat = setInterval(() => {
      if (sent) {
        if (performance.now() - sent >= 3 * every) fail(new Error(`LISTEN connection unanswered for ${3 * every} ms`));
        return;
      }
      sent = performance.now();
      client.query(EMPTY).then(
        () => (sent = 0),
        () => {},
      );
    }, every);
    this.beat.unref();
  }

  private schedule(): void {
    if (this.closed || this.timer) return;
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.opts.maxBackoffMs ?? 2_000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, delay);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.beat);
    clearTimeout(this.timer);
    this.timer = undefined;
    const c = this.client;
    this.client = undefined;
    if (c) await c.end().catch(() => {});
  }
}
