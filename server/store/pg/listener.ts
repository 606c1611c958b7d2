// One dedicated PostgreSQL connection per process that LISTENs on the control plane's
// channels (see CHANNELS in store.ts) and hands each notification to the local subscribers.
// It wakes the event streams of this instance when another instance writes an event, and
// will carry pause, limit, token and node changes to whoever must act on them.
//
// Notifications are lost while the connection is down (PostgreSQL keeps no backlog for a
// listener that is gone), so after every reconnection the listener calls `onReconnect`: the
// consumers then re-read what they follow from the tables, which are the truth.
import pg from 'pg';
import { clientConfig, type PoolOptions } from './pool.ts';

export type NotificationHandler = (channel: string, payload: string) => void;

export interface ListenerOptions extends PoolOptions {
  /** First delay before reconnecting; doubles up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  onError?: (err: Error) => void;
}

export class PgListener {
  private readonly url: string;
  private readonly channels: string[];
  private readonly opts: ListenerOptions;
  private readonly handlers = new Set<NotificationHandler>();
  private readonly reconnectHandlers = new Set<() => void>();
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private backoff: number;
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

  /** True while the LISTEN connection is up. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  onNotification(fn: NotificationHandler): () => void {
    this.handlers.add(fn);
    return () => this.handlers.delete(fn);
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
      if (this.client === client) this.client = undefined;
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
      for (const fn of this.handlers) fn(n.channel, n.payload ?? '');
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
    this.backoff = this.opts.minBackoffMs ?? 100;
    if (this.connectedOnce) {
      for (const fn of this.reconnectHandlers) fn();
    }
    this.connectedOnce = true;
    this.markReady();
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
    clearTimeout(this.timer);
    this.timer = undefined;
    const c = this.client;
    this.client = undefined;
    if (c) await c.end().catch(() => {});
  }
}
