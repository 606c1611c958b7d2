// The one reconnecting client of the API's event stream, used by the Electron main process
// (tray monitor and the renderer's streams) and by the renderer in web mode. It takes the
// EventSource constructor from its caller (the `eventsource` package in both today, because
// only it can send the Authorization header), so it imports neither Node nor the DOM.
//
// Two kinds of failure, two answers:
// - the connection drops: the EventSource reconnects by itself, honouring `retry:` and
//   sending Last-Event-ID, so the server resumes after the last event we saw;
// - the server refuses (a non-200 answer such as 401, 429 or 500): the EventSource gives up
//   (readyState CLOSED) and we open a new one ourselves, after an exponential backoff, with
//   `last_event_id` in the query. Events at or below the last id seen are dropped, so a
//   replay never delivers an event twice.
import type { EventSource as PackageEventSource } from 'eventsource';
import { buildQuery } from '../server/contract/query-string.ts';
import { HISTORY_TAIL, type EventFilter, type SessionEvent, type StreamState } from './api-types.ts';
import type { ApiErrorInfo } from './result.ts';

/** An EventSource class with the `eventsource` package's interface (a `fetch` option). */
export type EventSourceConstructor = typeof PackageEventSource;

export interface EventStreamOptions {
  EventSource: EventSourceConstructor;
  /** The server to stream from, read at every (re)connect; null when none is configured. */
  endpoint(): { baseUrl: string; token: string | null } | null;
  filter: EventFilter;
  onEvent(event: SessionEvent): void;
  onState?(state: StreamState, error?: ApiErrorInfo): void;
  /** Milliseconds before our own reconnect number `attempt` (1, 2, ...); `backoffDelay` by default. */
  retryDelay?(attempt: number): number;
}

/** Exponential backoff: 1 s, 2 s, 4 s ... up to 30 s, each spread by ±25% so clients do not reconnect in step. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  return Math.min(30_000, 1000 * 2 ** Math.min(Math.max(attempt, 1) - 1, 5)) * (0.75 + random() * 0.5);
}

/** The stream's address: a first connection asks for recent history only (`tail`), later ones resume by id. */
export function eventsUrl(baseUrl: string, filter: EventFilter, lastEventId: number | undefined): string {
  return `${baseUrl}/sessions/events${buildQuery({
    session_id: filter.session_id,
    event_type: filter.event_type,
    last_event_id: lastEventId,
    tail: lastEventId === undefined ? HISTORY_TAIL : undefined,
  })}`;
}

/** The error record for a refused stream (the EventSource reports only the HTTP status). */
function refusal(status: number): ApiErrorInfo {
  return {
    status,
    code: status === 401 ? 'unauthorized' : status === 429 ? 'rate_limited' : `http_${status}`,
    message: status === 401 ? 'The API token was refused.' : `The event stream answered ${status}.`,
    details: {},
  };
}

export class EventStream {
  #opts: EventStreamOptions;
  #source: InstanceType<EventSourceConstructor> | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #attempt = 0;
  #stopped = false;
  #lastId: number | undefined;

  constructor(opts: EventStreamOptions) {
    this.#opts = opts;
    this.#lastId = opts.filter.last_event_id;
    this.#connect();
  }

  /** The id of the last event delivered (undefined before the first). */
  get lastEventId(): number | undefined {
    return this.#lastId;
  }

  #connect(): void {
    if (this.#stopped) return;
    const { EventSource, onState } = this.#opts;
    const endpoint = this.#opts.endpoint();
    if (!endpoint) {
      onState?.('closed', { status: 401, code: 'unauthorized', message: 'No API endpoint is configured.', details: {} });
      return;
    }
    onState?.(this.#attempt === 0 ? 'connecting' : 'reconnecting');
    const source = new EventSource(eventsUrl(endpoint.baseUrl, this.#opts.filter, this.#lastId), {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${endpoint.token ?? ''}` } }),
    });
    this.#source = source;
    source.onopen = () => {
      this.#attempt = 0;
      onState?.('open');
    };
    source.onmessage = (m) => {
      let event: SessionEvent;
      try {
        event = JSON.parse(m.data) as SessionEvent;
      } catch {
        return;
      }
      if (typeof event.id === 'number') {
        if (this.#lastId !== undefined && event.id <= this.#lastId) return; // never deliver twice
        this.#lastId = event.id;
      }
      this.#opts.onEvent(event);
    };
    source.onerror = (e) => {
      if (this.#stopped || source !== this.#source) return;
      if (source.readyState !== EventSource.CLOSED) {
        // A dropped connection: the EventSource reconnects by itself with Last-Event-ID.
        onState?.('reconnecting', { status: 0, code: 'network_error', message: 'Lost the connection to the event stream; reconnecting.', details: {} });
        return;
      }
      // The EventSource gave up (non-200 or wrong content type): back off and retry ourselves.
      this.#attempt++;
      const delay = (this.#opts.retryDelay ?? backoffDelay)(this.#attempt);
      onState?.('reconnecting', e.code ? refusal(e.code) : undefined);
      this.#timer = setTimeout(() => this.#connect(), delay);
    };
  }

  /**
   * Reconnects now (after an endpoint change). The last id is kept for the same server; for
   * another server it means nothing (its ids are its own), so `fresh` starts from its recent tail.
   */
  restart(opts: { fresh?: boolean } = {}): void {
    if (this.#stopped) return;
    if (opts.fresh) this.#lastId = undefined;
    this.#source?.close();
    this.#source = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#attempt = 0;
    this.#connect();
  }

  /** Stops for good: no reconnect after this; reports the state `closed`. */
  close(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#source?.close();
    this.#opts.onState?.('closed');
  }
}
