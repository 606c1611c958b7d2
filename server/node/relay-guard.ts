// The geo relay port is open to anyone: what bounds connections that have not shown a valid grant
// yet (node/relay-server.ts). Each takes a slot at accept, in total and per source (an IPv4
// address, or an IPv6 /64), and gives it back once its grant is accepted or it is closed; over
// either cap a connection is destroyed at accept, before any TLS work. Refusals are logged at
// most once per LOG_MS, with their counts by reason.
import type { Logger } from '../domain.ts';

/** Connections not yet authenticated, at once, in total. */
export const MAX_PENDING = 512;
/** Connections not yet authenticated, at once, per source address (IPv6: per /64). */
export const MAX_PENDING_PER_SOURCE = 32;
const LOG_MS = 10_000;

/** The source a connection counts for: the IPv4 address (also when IPv4-mapped), or the IPv6 /64. */
export function sourceOf(address: string | undefined): string {
  const a = (address ?? '').toLowerCase();
  if (a.startsWith('::ffff:') && a.includes('.')) return a.slice(7);
  if (!a.includes(':')) return a;
  const [head, tail = ''] = a.split('::');
  const left = head ? head.split(':') : [];
  const right = a.includes('::') && tail ? tail.split(':') : [];
  const groups = a.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export class RelayGuard {
  private total = 0;
  private readonly bySource = new Map<string, number>();
  private refusals = new Map<string, number>();
  private lastLog = 0;
  private readonly log: Logger;
  private readonly maxTotal: number;
  private readonly maxPerSource: number;

  constructor(log: Logger, maxTotal = MAX_PENDING, maxPerSource = MAX_PENDING_PER_SOURCE) {
    this.log = log;
    this.maxTotal = maxTotal;
    this.maxPerSource = maxPerSource;
  }

  /** A slot for a new connection from `address`, with its release (idempotent); null over a cap. */
  admit(address: string | undefined): (() => void) | null {
    const src = sourceOf(address);
    const n = this.bySource.get(src) ?? 0;
    if (this.total >= this.maxTotal || n >= this.maxPerSource) {
      this.refused(this.total >= this.maxTotal ? 'pending_total' : 'pending_source');
      return null;
    }
    this.total++;
    this.bySource.set(src, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.bySource.get(src) ?? 1) - 1;
      if (left > 0) this.bySource.set(src, left);
      else this.bySource.delete(src);
    };
  }

  /** Counts a refusal (logged with the others at most once per LOG_MS). */
  refused(reason: string): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? 0) + 1);
    const now = Date.now();
    if (now - this.lastLog < LOG_MS) return;
    this.lastLog = now;
    this.log.warn({ refused: Object.fromEntries(this.refusals) }, 'geo relay connections refused (counts by reason since the last such line)');
    this.refusals = new Map();
  }

  /** Connections holding a slot now. */
  get pending(): number {
    return this.total;
  }
}
