// The main process's own watch on the event stream: it keeps LiveState (which sessions are
// active, how fast each moves) for the tray, and raises desktop notifications when a session
// ends, reaches its byte limit or loses its last connection.
import { Notification } from 'electron';
import { EventSource } from 'eventsource';
import type { SessionEvent } from '../common/api-types.ts';
import { Coalescer } from '../common/coalescer.ts';
import { EventStream } from '../common/event-stream.ts';
import type { Result } from '../common/result.ts';
import type { ApiClient, Endpoint } from './api-client.ts';
import { LiveState, type LiveSession } from './live.ts';

export interface NotifierOptions {
  api: ApiClient;
  endpoint: () => Endpoint | null;
  /** Shows the live state (the tray). */
  render(sessions: LiveSession[], totals: { up: number; down: number; active: number }): void;
}

/** Events older than this are replayed history: they neither move the tray nor notify. */
const RECENT_MS = 30_000;

/**
 * The tray's session look-ups: each session at most every 2 s, all together at most 2 a second.
 * Main shares the token's rate limit with the window (which has the same budget, see the
 * renderer's events slice): under connection churn both stay well under 600 per 60 s.
 */
const LOOKUPS = { perIdMs: 2000, perSecond: 2 };

/** How often the newest refusal of each session the tray lists (at most REFUSAL_SESSIONS) is read. */
export const REFUSALS_MS = 10_000;
const REFUSAL_SESSIONS = 15;

export class Notifier {
  readonly live = new LiveState();
  #opts: NotifierOptions;
  #stream: EventStream;
  readonly #lookups = new Coalescer((id) => this.#lookUp(id), LOOKUPS);
  /** Sessions whose end awaits their look-up (to tell ended, capped or disconnected apart). */
  readonly #ended = new Set<string>();
  readonly #refusalTimer: NodeJS.Timeout;

  constructor(opts: NotifierOptions) {
    this.#opts = opts;
    this.#stream = new EventStream({ EventSource, endpoint: opts.endpoint, filter: {}, onEvent: (e) => void this.#onEvent(e) });
    this.#refusalTimer = setInterval(() => void this.#readRefusals(), REFUSALS_MS);
    this.#refusalTimer.unref?.();
  }

  /** The newest refusal of each session the tray lists (why a paused or capped client gets nothing). */
  async #readRefusals(): Promise<void> {
    const listed = this.live.active().slice(0, REFUSAL_SESSIONS);
    let changed = false;
    for (const s of listed) {
      const r = await this.#opts.api.sessionRefusals(s.id);
      if (!r.ok) continue;
      const newest = r.value.refusals[0];
      if (newest && newest.at !== s.lastRefusal?.at) {
        s.lastRefusal = { reason: newest.reason, at: newest.at };
        changed = true;
      }
    }
    if (changed) this.#render();
  }

  /** Loads the active sessions (the truth at start and after an endpoint change). */
  async seed(): Promise<void> {
    const r = await this.#opts.api.listSessions({ status: 'active', limit: 500 });
    if (r.ok) this.live.seed(r.value.sessions);
    this.#render();
  }

  /** After an endpoint change; another server (`fresh`) has none of the sessions known here. */
  restart(fresh: boolean): void {
    if (fresh) this.live.sessions.clear();
    this.#stream.restart({ fresh });
    void this.seed();
  }

  /** After a pause or resume from the tray: says when it failed, and shows the session's new state. */
  async afterAction(action: Promise<Result<unknown>>, id: string): Promise<void> {
    const r = await action;
    if (!r.ok) notify('Could not change the session', r.error.message);
    const s = await this.#opts.api.getSession(id);
    if (s.ok) this.live.put(s.value);
    this.#render();
  }

  async #onEvent(e: SessionEvent): Promise<void> {
    // The stream first replays stored history; only recent events move the tray or raise
    // notifications — the active-session listing is the truth at start.
    if (Date.now() - Date.parse(e.created_at) > RECENT_MS) return;
    const s = this.live.apply(e);
    if (!s || e.event_type === 'session_start' || e.event_type === 'session_end') {
      if (e.event_type === 'session_end') this.#ended.add(e.session_id);
      this.#lookups.request(e.session_id); // coalesced: one look-up for a burst of events
    }
    this.#render();
  }

  /** The session's state from the server; after an end, the notification it calls for. */
  async #lookUp(id: string): Promise<void> {
    const { api } = this.#opts;
    const r = await api.getSession(id);
    const s = r.ok ? this.live.put(r.value) : this.live.sessions.get(id);
    if (this.#ended.delete(id) && s) {
      if (s.status === 'ended') {
        const limits = await api.getLimits('session');
        const cap = limits.ok ? limits.value : null;
        const hit = cap && ((cap.downloaded_bytes !== undefined && s.downloaded >= cap.downloaded_bytes) || (cap.uploaded_bytes !== undefined && s.uploaded >= cap.uploaded_bytes));
        notify(hit ? 'Session reached its limit' : 'Session ended', `${s.client_id} in ${s.zone}${hit ? ': its byte limit is used up' : ''}.`);
      } else if (s.status !== 'active' && !s.paused) {
        // (Connected again by the time of the look-up: nothing to say.)
        notify('Session disconnected', `${s.client_id} in ${s.zone} has no open connection now.`);
      }
    }
    this.#render();
  }

  #render(): void {
    this.#opts.render(this.live.active(), this.live.totals());
  }

  dispose(): void {
    clearInterval(this.#refusalTimer);
    this.#lookups.close();
    this.#stream.close();
  }
}

/** A quiet desktop notification, where the system has them. */
export function notify(title: string, body: string): void {
  if (Notification.isSupported()) new Notification({ title, body, silent: true }).show();
}
