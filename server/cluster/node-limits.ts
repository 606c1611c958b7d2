// One node's limits, as the control plane keeps them across the node's channels (node-guard.ts):
// the numbers, the token buckets, the claims in flight and queued, and the refusals counted and
// logged at most once a second.
import type { Logger } from '../domain.ts';

const MiB = 1024 * 1024;
/** The largest frame a node may send; a node splits its reports to stay under it. */
export const NODE_FRAME_LIMIT = MiB;
export const NODE_LIMITS = {
  /** Channels opened per node (a node reconnects after 250 ms, backing off to 5 s). */
  channels: { rate: 0.5, burst: 5 },
  /** Frames per second, of every kind (a node sends a few: reports, a claim per new session, releases). */
  frames: { rate: 200, burst: 1000 },
  /**
   * Frame bytes per second: a busy node's report every 500 ms (up to 4,000 sessions' counters
   * and 2,000 events, under 1 MiB each) and its backlog after a reconnection (sent 8 at a time).
   */
  bytes: { rate: 4 * MiB, burst: 16 * MiB },
  /** Reports and contacts per second: a node sends one every 500 ms, and its backlog after a reconnection. */
  reports: { rate: 10, burst: 60 },
  /**
   * Claims per second: one before each session's first connection on the node (its read of the
   * session and limits), so a node with connection churn asks often; what they cost the database
   * is bounded by the claims in flight, beyond which they wait (or are refused past the queue).
   */
  claims: { rate: 200, burst: 400 },
  claimsInFlight: 4,
  claimsQueued: 200,
  /** Grant releases per second (a node asks again 3 s later). */
  releases: { rate: 20, burst: 100 },
  /** Reports and releases accepted but not yet applied, and their frames' bytes. */
  pending: 64,
  pendingBytes: 16 * MiB,
  /** A node that reads nothing while this much waits to be sent to it is cut. */
  unread: 16 * MiB,
} as const;
/** Close codes: a newer channel of the node took over; something was refused, resend it later. */
export const CLOSE_REPLACED = 4001;
export const CLOSE_RESEND = 1013;
export const CLOSE_FLOOD = 1008;
const LOG_EVERY_MS = 1000;

export class TokenBucket {
  private readonly rate: number;
  private readonly burst: number;
  private tokens: number;
  private at = performance.now();
  constructor(rate: number, burst: number) {
    this.rate = rate;
    this.burst = burst;
    this.tokens = burst;
  }
  /** The tokens there are now. */
  available(): number {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rate);
    this.at = now;
    return this.tokens;
  }
  take(n = 1): boolean {
    if (this.available() < n) return false;
    this.tokens -= n;
    return true;
  }
}

export type Kind = 'channel' | 'frame' | 'frame_too_big' | 'unread' | 'contact' | 'contact_failed' | 'report' | 'report_failed' | 'claim' | 'claim_queue' | 'claim_failed' | 'release';

/** A channel as its node's claim queue sees it: claims of a closed channel are not run. */
interface ClaimChannel {
  readonly open: boolean;
}

/** One node's limits, kept across its channels. */
export class NodeLimits {
  readonly channels = new TokenBucket(NODE_LIMITS.channels.rate, NODE_LIMITS.channels.burst);
  readonly frames = new TokenBucket(NODE_LIMITS.frames.rate, NODE_LIMITS.frames.burst);
  readonly bytes = new TokenBucket(NODE_LIMITS.bytes.rate, NODE_LIMITS.bytes.burst);
  readonly reports = new TokenBucket(NODE_LIMITS.reports.rate, NODE_LIMITS.reports.burst);
  readonly claims = new TokenBucket(NODE_LIMITS.claims.rate, NODE_LIMITS.claims.burst);
  readonly releases = new TokenBucket(NODE_LIMITS.releases.rate, NODE_LIMITS.releases.burst);
  inFlight = 0;
  readonly queue: Array<{ ch: ClaimChannel; run: () => Promise<void> }> = [];
  /** The node's live channel, closed when a newer one replaces it. */
  live: { shut(code: number, reason: string): void } | null = null;
  private readonly counts = new Map<Kind, number>();
  private lastLog = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastErr = '';

  readonly name: string;
  private readonly log: Logger;
  constructor(name: string, log: Logger) {
    this.name = name;
    this.log = log;
  }

  refused(kind: Kind, err?: unknown): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    if (err !== undefined) this.lastErr = String(err);
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), Math.max(0, this.lastLog + LOG_EVERY_MS - Date.now()));
    this.timer.unref();
  }

  private flush(): void {
    this.timer = null;
    this.lastLog = Date.now();
    const refused = [...this.counts].map(([k, n]) => `${k}=${n}`).join(',');
    const total = [...this.counts.values()].reduce((a, b) => a + b, 0);
    this.counts.clear();
    this.log.warn({ node: this.name, refused, total, ...(this.lastErr ? { err: this.lastErr } : {}) }, 'a node went over its limits or failed; refused');
    this.lastErr = '';
  }

  runClaim(ch: ClaimChannel, run: () => Promise<void>): void {
    this.inFlight++;
    run()
      .catch(() => {})
      .finally(() => {
        this.inFlight--;
        let next;
        while ((next = this.queue.shift()) && !next.ch.open);
        if (next) this.runClaim(next.ch, next.run);
      });
  }
}
