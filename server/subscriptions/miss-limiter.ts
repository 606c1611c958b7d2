// A small per-address limiter for GET /sub/<secret>: it counts only the misses (unknown or
// revoked secrets), so a client polling its own URL is never slowed, while an address that
// guesses is refused (429) for the rest of a fixed window, every request included, so a
// scan learns nothing more until the window ends. @fastify/rate-limit counts every request
// and cannot count only failures, hence this one.
export interface MissLimiterOptions {
  /** Misses allowed per address in one window. Default 10. */
  max: number;
  /** Window length. Default 60 s. */
  windowMs: number;
}

export class MissLimiter {
  private readonly opts: MissLimiterOptions;
  private readonly windows = new Map<string, { misses: number; resetAt: number }>();
  private static readonly MAX_ADDRESSES = 50_000;

  constructor(opts: Partial<MissLimiterOptions> = {}) {
    this.opts = { max: opts.max ?? 10, windowMs: opts.windowMs ?? 60_000 };
  }

  private current(address: string, now: number): { misses: number; resetAt: number } | undefined {
    const w = this.windows.get(address);
    if (w && w.resetAt <= now) {
      this.windows.delete(address);
      return undefined;
    }
    return w;
  }

  /** Seconds until the address may ask again, or 0 when it is not blocked. */
  blockedFor(address: string, now = Date.now()): number {
    const w = this.current(address, now);
    return w && w.misses >= this.opts.max ? Math.max(1, Math.ceil((w.resetAt - now) / 1000)) : 0;
  }

  /** Records a miss; returns the seconds the address is now blocked for (0 when still allowed). */
  miss(address: string, now = Date.now()): number {
    let w = this.current(address, now);
    if (!w) {
      if (this.windows.size >= MissLimiter.MAX_ADDRESSES) this.sweep(now);
      w = { misses: 0, resetAt: now + this.opts.windowMs };
      this.windows.set(address, w);
    }
    w.misses++;
    return this.blockedFor(address, now);
  }

  get limit(): number {
    return this.opts.max;
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
    // Still full (a wide scan from many addresses): forget the oldest half rather than grow.
    if (this.windows.size >= MissLimiter.MAX_ADDRESSES) {
      let drop = Math.floor(this.windows.size / 2);
      for (const k of this.windows.keys()) {
        if (drop-- <= 0) break;
        this.windows.delete(k);
      }
    }
  }
}
