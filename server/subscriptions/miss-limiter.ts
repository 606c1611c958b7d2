// A small per-address limiter for GET /sub/<secret>: it counts only the misses (unknown or
// revoked secrets), and a valid secret is always answered (the route checks the secret
// first), so a client polling its own URL is never slowed nor locked out by others behind the
// same NAT or proxy, while an address that guesses gets 429 instead of 404 for the rest of a
// fixed window. Addresses are counted by addressKey: IPv6 by its /64, the block one host is
// usually given, so rotating through it gains nothing. @fastify/rate-limit counts every
// request and cannot count only failures, hence this one.
import { isIPv6 } from 'node:net';

/** The key an address is counted under: IPv4 as is (also when IPv4-mapped), IPv6 by its /64. */
export function addressKey(address: string): string {
  const a = address.replace(/%.*$/, '').toLowerCase();
  if (a.startsWith('::ffff:') && a.includes('.')) return a.slice(7);
  if (!isIPv6(a)) return a;
  const [head, tail = ''] = a.split('::');
  const left = head ? head.split(':') : [];
  // An embedded IPv4 tail (other than mapped) counts as two groups; only the first four matter.
  const right = tail ? tail.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const groups = a.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`;
}

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

  private current(key: string, now: number): { misses: number; resetAt: number } | undefined {
    const w = this.windows.get(key);
    if (w && w.resetAt <= now) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }

  /** Seconds until the address may ask again, or 0 when it is not blocked. */
  blockedFor(address: string, now = Date.now()): number {
    const w = this.current(addressKey(address), now);
    return w && w.misses >= this.opts.max ? Math.max(1, Math.ceil((w.resetAt - now) / 1000)) : 0;
  }

  /** Records a miss; returns the seconds the address is now blocked for (0 when still allowed). */
  miss(address: string, now = Date.now()): number {
    const key = addressKey(address);
    let w = this.current(key, now);
    if (!w) {
      if (this.windows.size >= MissLimiter.MAX_ADDRESSES) this.sweep(now);
      w = { misses: 0, resetAt: now + this.opts.windowMs };
      this.windows.set(key, w);
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
