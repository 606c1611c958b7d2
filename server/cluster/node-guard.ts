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
import { CLOSE_FLOOD, CLOSE_REPLACED, CLOSE_RESEND, NODE_LIMITS, NodeLimits } from './node-limits.ts';

export { CLOSE_FLOOD, CLOSE_REPLACED, CLOSE_RESEND, NODE_FRAME_LIMIT, NODE_LIMITS, TokenBucket } from './node-limits.ts';

const tokenKey = (token: string) => createHash('sha256').update(token).digest('base64');

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
