// Coalesces look-ups that events ask for (a session's fresh state after its start or end), so
// connection churn cannot turn into a request per event: each id is looked up at most once per
// `perIdMs` (requests in between merge into one, run when that time is up), and all ids
// together at most `perSecond` times a second (a token bucket); the rest wait their turn.
// The API's rate limit (600 requests per 60 s per token, shared by the window and the tray)
// stays far away: see the budgets where it is used (renderer events slice, main/notifier.ts).
// Neutral ground: timers only, no Node and no DOM.

export interface CoalescerOptions {
  perIdMs: number;
  perSecond: number;
}

export class Coalescer {
  readonly #run: (id: string) => Promise<unknown>;
  readonly #opts: CoalescerOptions;
  /** Ids waiting, oldest request first. */
  readonly #pending = new Set<string>();
  /** When each recently looked-up id last ran (pruned once older than perIdMs). */
  readonly #last = new Map<string, number>();
  #tokens: number;
  #refilledAt = Date.now();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #closed = false;

  constructor(run: (id: string) => Promise<unknown>, opts: CoalescerOptions) {
    this.#run = run;
    this.#opts = opts;
    this.#tokens = opts.perSecond;
  }

  /** Asks for a look-up of `id`: now if its time and the budget allow, else as soon as they do. */
  request(id: string): void {
    if (this.#closed) return;
    this.#pending.add(id);
    this.#drain();
  }

  /** How many ids wait. */
  get waiting(): number {
    return this.#pending.size;
  }

  close(): void {
    this.#closed = true;
    this.#pending.clear();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #drain(): void {
    if (this.#timer) return; // a drain is already scheduled
    const now = Date.now();
    const { perIdMs, perSecond } = this.#opts;
    this.#tokens = Math.min(perSecond, this.#tokens + ((now - this.#refilledAt) / 1000) * perSecond);
    this.#refilledAt = now;
    for (const [id, at] of this.#last) if (now - at >= perIdMs) this.#last.delete(id);
    let wait = Infinity;
    for (const id of this.#pending) {
      const last = this.#last.get(id);
      if (last !== undefined) {
        wait = Math.min(wait, last + perIdMs - now);
        continue;
      }
      if (this.#tokens < 1) {
        wait = Math.min(wait, ((1 - this.#tokens) / perSecond) * 1000);
        break;
      }
      this.#tokens -= 1;
      this.#pending.delete(id);
      this.#last.set(id, now);
      this.#run(id).catch(() => {
        /* the caller's own run reports its errors */
      });
    }
    if (this.#pending.size && wait !== Infinity) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#drain();
      }, Math.max(10, Math.ceil(wait)));
    }
  }
}
