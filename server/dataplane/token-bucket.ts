// Token bucket with debt: reserve(n) always succeeds and returns how long the caller must wait
// before sending n bytes. Shared by every connection that draws from the same limit, so the sum
// of their rates is bounded by `rate`. Capacity (the burst) is a quarter second of traffic: small
// enough that over a 10 s window the measured rate stays within about 2.5% of the cap, large
// enough that a timer firing late under load does not lose the tokens that accrued meanwhile.

export class TokenBucket {
  rate: number; // bytes per second; Infinity = unlimited
  /** Bumped at every rate change, so that a caller already waiting can re-evaluate its wait. */
  epoch = 0;
  private tokens: number;
  private last: number;

  constructor(rate: number | undefined, now: number) {
    this.rate = rate === undefined || rate <= 0 ? Infinity : rate;
    this.tokens = this.capacity();
    this.last = now;
  }

  get limited(): boolean {
    return this.rate !== Infinity;
  }

  capacity(): number {
    return this.rate === Infinity ? Infinity : Math.max(1024, this.rate / 4);
  }

  private refill(now: number): void {
    if (this.rate === Infinity) return;
    const dt = now - this.last;
    if (dt > 0) this.tokens = Math.min(this.capacity(), this.tokens + (dt * this.rate) / 1000);
    this.last = now;
  }

  setRate(rate: number | undefined, now: number): void {
    const next = rate === undefined || rate <= 0 ? Infinity : rate;
    if (next === this.rate) return;
    this.refill(now);
    this.epoch++;
    this.rate = next;
    if (next === Infinity) this.tokens = 0;
    else this.tokens = Math.min(this.tokens, this.capacity());
    this.last = now;
  }

  /** Takes n tokens (possibly into debt); returns milliseconds to wait before sending. */
  reserve(n: number, now: number): number {
    if (this.rate === Infinity) return 0;
    this.refill(now);
    this.tokens -= n;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.rate;
  }

  /** Milliseconds until the bucket's debt (every reservation made so far) is paid at the current rate. */
  debtMs(now: number): number {
    if (this.rate === Infinity) return 0;
    this.refill(now);
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.rate;
  }

  /** Largest piece worth reserving at once, so that a single wait stays near 250 ms. */
  maxPiece(): number {
    return this.rate === Infinity ? Infinity : Math.max(256, Math.floor(this.rate / 4));
  }
}
