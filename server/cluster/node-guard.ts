// What one node token may cost the control plane (node-channel.ts). A node is trusted with its
// own sessions' data, never with capacity: whatever it sends, it must not slow anyone else's API
// requests or another node's reports. Per node, in this process:
//  - one live channel: a new one replaces the old (closed with CLOSE_REPLACED), and channels are
//    opened at most NODE_LIMITS.channels (beyond: 429 before the upgrade);
//  - frames of at most NODE_FRAME_LIMIT bytes (ws closes with 1009 beyond, before buffering), and
//    at most NODE_LIMITS.frames and NODE_LIMITS.bytes, counted before a frame is parsed: beyond
//    them the channel is cut at once (CLOSE_FLOOD), so what a flooding node still sends on it
//    costs no parsing; a token whose node is over its channel rate is refused before any lookup;
//  - claims: a token bucket (beyond it dropped unanswered: the node decides alone after its
//    time-out, as without a control plane), NODE_LIMITS.claimsInFlight at once and
//    NODE_LIMITS.claimsQueued waiting (beyond them answered `claimed ok:false` at once);
//  - releases: a token bucket; beyond it dropped (the node asks again);
//  - reports: a token bucket, and NODE_LIMITS.pending reports or releases (and pendingBytes)
//    waiting to be applied. A report beyond either, or one whose applying fails, is neither
//    applied nor acknowledged, nor is any later report of that channel (a later seq applied
//    first would make the store ignore the refused one when resent), and the channel is closed
//    with CLOSE_RESEND: the node reconnects and resends every unacknowledged report in order, so
//    a legitimate node loses no counted byte. A contact (seq 0) beyond the bucket is just dropped.
// Refusals are logged at most once a second per node, with their counts by kind.
import { createHash } from 'node:crypto';
import type { WebSocket } from 'ws';
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

const tokenKey = (token: string) => createHash('sha256').update(token).digest('base64');

type Kind = 'channel' | 'frame' | 'frame_too_big' | 'unread' | 'contact' | 'contact_failed' | 'report' | 'report_failed' | 'claim' | 'claim_queue' | 'claim_failed' | 'release';

/** One node's limits, kept across its channels. */
class NodeLimits {
  readonly channels = new TokenBucket(NODE_LIMITS.channels.rate, NODE_LIMITS.channels.burst);
  readonly frames = new TokenBucket(NODE_LIMITS.frames.rate, NODE_LIMITS.frames.burst);
  readonly bytes = new TokenBucket(NODE_LIMITS.bytes.rate, NODE_LIMITS.bytes.burst);
  readonly reports = new TokenBucket(NODE_LIMITS.reports.rate, NODE_LIMITS.reports.burst);
  readonly claims = new TokenBucket(NODE_LIMITS.claims.rate, NODE_LIMITS.claims.burst);
  readonly releases = new TokenBucket(NODE_LIMITS.releases.rate, NODE_LIMITS.releases.burst);
  inFlight = 0;
  readonly queue: Array<{ ch: ChannelGuard; run: () => Promise<void> }> = [];
  live: ChannelGuard | null = null;
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

  runClaim(ch: ChannelGuard, run: () => Promise<void>): void {
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

/** The limits of one channel of a node (its own pending reports; the node's buckets). */
export class ChannelGuard {
  open = true;
  private pending = 0;
  private pendingBytes = 0;
  private frameSize = 0;
  /** The first report seq refused or failed on this channel: neither it nor any later one is applied. */
  private gap = Infinity;
  private readonly sizes: number[] = [];

  private readonly node: NodeLimits;
  private readonly ws: WebSocket;
  constructor(node: NodeLimits, ws: WebSocket) {
    this.node = node;
    this.ws = ws;
    ws.once('close', () => (this.open = false));
    ws.on('error', (err: Error & { code?: string }) => {
      if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') node.refused('frame_too_big');
    });
  }

  /** Closes the channel (the node reconnects); its frames from now on are ignored. */
  shut(code: number, reason: string): void {
    if (!this.open) return;
    this.open = false;
    this.ws.close(code, reason);
    // A peer that does not answer the closing handshake is cut.
    setTimeout(() => this.ws.terminate(), 2000).unref();
  }

  /** Before a frame is parsed: false when it is to be ignored (over the bytes rate: the channel is closed). */
  frame(size: number): boolean {
    if (!this.open) return false;
    if (this.ws.bufferedAmount > NODE_LIMITS.unread) {
      this.node.refused('unread');
      this.open = false;
      this.ws.terminate();
      return false;
    }
    if (!this.node.frames.take() || !this.node.bytes.take(size)) {
      // Cut at once: the frames it still sends on this channel are not even read.
      this.node.refused('frame');
      this.open = false;
      this.ws.close(CLOSE_FLOOD, 'over the node frame rate');
      this.ws.terminate();
      return false;
    }
    this.frameSize = size;
    return true;
  }

  /** A claim: run now, queued, dropped (over the rate) or refused at once (`refuse` answers ok:false). */
  claim(run: () => Promise<void>, refuse: () => void): void {
    const n = this.node;
    if (!n.claims.take()) return n.refused('claim');
    if (n.inFlight >= NODE_LIMITS.claimsInFlight && n.queue.length >= NODE_LIMITS.claimsQueued) {
      n.refused('claim_queue');
      refuse();
      return;
    }
    if (n.inFlight < NODE_LIMITS.claimsInFlight) n.runClaim(this, run);
    else n.queue.push({ ch: this, run });
  }

  /** A claim's lookup failed (it was answered ok:false). */
  claimFailed(err: unknown): void {
    this.node.refused('claim_failed', err);
  }

  /** A release as it arrives: false when dropped (the node asks again). */
  release(): boolean {
    if (this.gap !== Infinity || this.pending >= NODE_LIMITS.pending || !this.node.releases.take()) {
      this.node.refused('release');
      return false;
    }
    this.queued();
    return true;
  }

  /** A report (seq 0: a contact) as it arrives: false when it is not to be applied, nor acknowledged. */
  report(seq: number): boolean {
    const over = !this.node.reports.take() || this.pending >= NODE_LIMITS.pending || this.pendingBytes + this.frameSize > NODE_LIMITS.pendingBytes;
    if (seq === 0) {
      if (over) this.node.refused('contact');
      else this.queued();
      return !over;
    }
    if (over || seq >= this.gap) {
      this.node.refused('report');
      this.refuseFrom(seq);
      return false;
    }
    this.queued();
    return true;
  }

  /**
   * In order, as a report (its seq) or a release (no seq) is about to be applied: false when it
   * is not to be, because a report before it was refused or failed.
   */
  next(seq?: number): boolean {
    this.pending--;
    this.pendingBytes -= this.sizes.shift() ?? 0;
    return seq === 0 || (seq === undefined ? this.gap === Infinity : seq < this.gap);
  }

  /** Applying report `seq` failed: it and every later one of this channel are resent after a reconnection. */
  failed(seq: number, err: unknown): void {
    if (seq === 0) return this.node.refused('contact_failed', err);
    this.node.refused('report_failed', err);
    this.refuseFrom(seq);
  }

  private refuseFrom(seq: number): void {
    this.gap = Math.min(this.gap, seq);
    this.shut(CLOSE_RESEND, 'a report was refused; resend after reconnecting');
  }

  private queued(): void {
    this.pending++;
    this.pendingBytes += this.frameSize;
    this.sizes.push(this.frameSize);
  }
}

export interface NodeGuards {
  /** Before a token is looked up: true when it is a node's that opens channels too often (answer 429). */
  early(token: string): boolean;
  /** Once the token is a node's, before its channel is upgraded: false when it opens channels too often (answer 429). */
  admit(node: { id: string; name: string }, token: string): boolean;
  /** A new channel of the node: its guard. The node's previous channel is closed (replaced). */
  attach(node: { id: string; name: string }, ws: WebSocket): ChannelGuard;
}

export function createNodeGuards(log: Logger): NodeGuards {
  const nodes = new Map<string, NodeLimits>();
  /** The nodes' tokens seen here (a digest), so that one over its channel rate costs no lookup. */
  const tokens = new Map<string, NodeLimits>();
  const of = (node: { id: string; name: string }) => {
    let n = nodes.get(node.id);
    if (!n) nodes.set(node.id, (n = new NodeLimits(node.name, log)));
    return n;
  };
  return {
    early(token) {
      const n = tokens.get(tokenKey(token));
      if (!n || n.channels.available() >= 1) return false;
      n.refused('channel');
      return true;
    },
    admit(node, token) {
      const n = of(node);
      if (tokens.size < 100_000) tokens.set(tokenKey(token), n);
      if (n.channels.take()) return true;
      n.refused('channel');
      return false;
    },
    attach(node, ws) {
      const n = of(node);
      n.live?.shut(CLOSE_REPLACED, 'replaced by a newer channel of this node');
      const ch = new ChannelGuard(n, ws);
      n.live = ch;
      return ch;
    },
  };
}
