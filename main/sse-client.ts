// The event stream client of the main process, on the `eventsource` package: it resumes
// with Last-Event-ID (the package sends it on its own reconnects; we pass last_event_id
// when we reconnect ourselves) and backs off exponentially when the server refuses.
import { EventSource } from 'eventsource';
import { HISTORY_TAIL, type EventFilter, type SessionEvent, type StreamState } from '../common/api-types.ts';
import type { Endpoint } from './api-client.ts';
import { query } from './api-client.ts';

export interface StreamCallbacks {
  onEvent(e: SessionEvent): void;
  onState(state: StreamState, error?: { status: number; code: string; message: string }): void;
}

export class SseClient {
  #es: EventSource | null = null;
  #timer: NodeJS.Timeout | null = null;
  #attempt = 0;
  #stopped = false;
  #lastId: number | undefined;
  #endpoint: () => Endpoint | null;
  #filter: EventFilter;
  #cb: StreamCallbacks;

  constructor(endpoint: () => Endpoint | null, filter: EventFilter, cb: StreamCallbacks) {
    this.#endpoint = endpoint;
    this.#filter = filter;
    this.#cb = cb;
    this.#lastId = filter.last_event_id;
    this.#connect();
  }

  get lastEventId(): number | undefined {
    return this.#lastId;
  }

  #connect(): void {
    if (this.#stopped) return;
    const ep = this.#endpoint();
    if (!ep) {
      this.#cb.onState('closed', { status: 401, code: 'unauthorized', message: 'No endpoint configured.' });
      return;
    }
    this.#cb.onState(this.#attempt ? 'reconnecting' : 'connecting');
    const url = `${ep.baseUrl}/sessions/events${query({
      session_id: this.#filter.session_id,
      event_type: this.#filter.event_type,
      last_event_id: this.#lastId,
      tail: this.#lastId === undefined ? HISTORY_TAIL : undefined,
    })}`;
    const es = new EventSource(url, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${ep.token}` } }),
    });
    this.#es = es;
    es.onopen = () => {
      this.#attempt = 0;
      this.#cb.onState('open');
    };
    es.onmessage = (m) => {
      let ev: SessionEvent;
      try {
        ev = JSON.parse(m.data) as SessionEvent;
      } catch {
        return;
      }
      if (this.#lastId !== undefined && ev.id <= this.#lastId) return;
      this.#lastId = ev.id;
      this.#cb.onEvent(ev);
    };
    es.onerror = (e) => {
      if (this.#stopped) return;
      const code = (e as { code?: number }).code;
      if (es.readyState !== EventSource.CLOSED) {
        this.#cb.onState('reconnecting', { status: 0, code: 'network_error', message: 'Lost the event stream; reconnecting.' });
        return;
      }
      this.#attempt++;
      const delay = Math.min(30_000, 1000 * 2 ** Math.min(this.#attempt - 1, 5)) * (0.75 + Math.random() * 0.5);
      this.#cb.onState('reconnecting', code ? { status: code, code: code === 401 ? 'unauthorized' : `http_${code}`, message: `The event stream answered ${code}.` } : undefined);
      this.#timer = setTimeout(() => this.#connect(), delay);
    };
  }

  /**
   * Reconnects now (after an endpoint change). The last id is kept for the same server; for
   * another server it means nothing (its ids are its own), so `fresh` starts from its recent tail.
   */
  restart(opts: { fresh?: boolean } = {}): void {
    if (opts.fresh) this.#lastId = undefined;
    this.#es?.close();
    if (this.#timer) clearTimeout(this.#timer);
    this.#attempt = 0;
    this.#connect();
  }

  close(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#es?.close();
  }
}
