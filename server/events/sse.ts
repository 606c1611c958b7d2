// The Server-Sent Events writer: replay from SQLite after Last-Event-ID, then live events,
// with no gap and no duplicate; keep-alive comments; a bound on what a slow consumer buffers.
import type { ServerResponse } from 'node:http';
import type { SessionEvent } from '../contract/schemas.ts';
import type { EventFilter, Store } from '../store/store.ts';
import type { EventBus } from './bus.ts';

export interface SseOptions {
  retryMs: number;
  keepAliveMs: number;
  /** Bytes a consumer may leave unread before it is disconnected (it resumes with Last-Event-ID). */
  maxBufferedBytes: number;
  replayBatch: number;
}

export function frame(e: SessionEvent): string {
  return `id: ${e.id}\ndata: ${JSON.stringify(e)}\n\n`;
}

export function errorFrame(body: unknown): string {
  return `data: ${JSON.stringify(body)}\n\n`;
}

export interface StreamHandle {
  close(): void;
}

export function openEventStream(
  res: ServerResponse,
  headers: Record<string, string | number | string[] | undefined>,
  deps: {
    store: Store;
    bus: EventBus;
    customerId: string;
    filter: EventFilter;
    lastEventId: number;
    options: SseOptions;
    /** The first replay batch, already read by the caller (so a failing store still gets a 500 answer). */
    firstBatch?: SessionEvent[];
  },
): StreamHandle {
  const { store, bus, customerId, filter, options } = deps;
  let lastSent = deps.lastEventId;
  let replaying = true;
  let closed = false;
  const pending: SessionEvent[] = [];

  res.writeHead(200, {
    ...Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(`retry: ${options.retryMs}\n\n`);

  const write = (chunk: string) => {
    if (closed) return;
    res.write(chunk);
    if (res.writableLength > options.maxBufferedBytes) close(); // slow consumer: cut, it resumes by id
  };
  const send = (e: SessionEvent) => {
    if (e.id <= lastSent) return;
    lastSent = e.id;
    write(frame(e));
  };

  const unsubscribe = bus.subscribe({
    customerId,
    filter,
    deliver: (e) => (replaying ? pending.push(e) : send(e)),
  });
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), options.keepAliveMs);
  keepAlive.unref();

  function close() {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    unsubscribe();
    res.destroy();
  }
  res.on('close', close);

  const waitForDrain = () =>
    new Promise<void>((resolve) => {
      if (closed || res.writableLength < options.maxBufferedBytes / 2) return resolve();
      res.once('drain', resolve);
      res.once('close', resolve);
    });

  (async () => {
    // Replay in batches; live events that arrive meanwhile wait in `pending`. The final
    // query and the switch to live delivery run in one synchronous step, so nothing falls between.
    let first = deps.firstBatch;
    for (;;) {
      if (closed) return;
      const batch = first ?? store.eventsAfter(customerId, lastSent, filter, options.replayBatch);
      first = undefined;
      for (const e of batch) send(e);
      if (batch.length < options.replayBatch) break;
      await waitForDrain();
    }
    replaying = false;
    for (const e of pending.splice(0)) send(e);
  })().catch(() => close());

  return { close };
}
