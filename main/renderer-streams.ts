// The event streams the renderer opens through IPC (openStream / closeStream): each runs in
// main (which holds the token) and forwards its events and states on the `app:stream`
// channel, tagged with the renderer's stream id. Bounded, so a misbehaving page cannot open
// server connections without end.
import { EventSource } from 'eventsource';
import type { EventFilter } from '../common/api-types.ts';
import { EventStream } from '../common/event-stream.ts';
import type { StreamMessage } from '../common/ipc-contract.ts';
import { fail, type Result } from '../common/result.ts';
import type { Endpoint } from './api-client.ts';

/** The window needs two or three at a time. */
export const MAX_RENDERER_STREAMS = 16;

export class RendererStreams {
  #streams = new Map<string, EventStream>();
  #endpoint: () => Endpoint | null;
  #send: (message: StreamMessage) => void;

  constructor(endpoint: () => Endpoint | null, send: (message: StreamMessage) => void) {
    this.#endpoint = endpoint;
    this.#send = send;
  }

  /** Opens (or reopens) the stream `streamId`. */
  open(streamId: string, filter: EventFilter): Result<true> {
    if (!this.#streams.has(streamId) && this.#streams.size >= MAX_RENDERER_STREAMS) {
      return fail(429, 'too_many_streams', `At most ${MAX_RENDERER_STREAMS} event streams may be open at once.`);
    }
    this.#streams.get(streamId)?.close();
    this.#streams.set(
      streamId,
      new EventStream({
        EventSource,
        endpoint: this.#endpoint,
        filter,
        onEvent: (event) => this.#send({ streamId, kind: 'event', event }),
        onState: (state, error) => this.#send({ streamId, kind: 'state', state, error }),
      }),
    );
    return { ok: true, value: true };
  }

  close(streamId: string): void {
    this.#streams.get(streamId)?.close();
    this.#streams.delete(streamId);
  }

  /** After an endpoint change: see EventStream.restart. */
  restart(fresh: boolean): void {
    for (const s of this.#streams.values()) s.restart({ fresh });
  }

  closeAll(): void {
    for (const s of this.#streams.values()) s.close();
    this.#streams.clear();
  }

  dispose(): void {
    this.closeAll();
  }
}
