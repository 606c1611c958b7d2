// Silence on a node's channel, watched from both ends. The control plane closes a channel that
// carried nothing for CHANNEL_SILENT_MS as lost (node-connection.ts), which marks the node down
// NODE_LOST_SECONDS later: a node reports at least every 500 ms (node/reporter.ts). The node pings
// the control plane every 500 ms and, hearing nothing for CHANNEL_SILENT_MS, connects again, to the
// next control URL (node/channel-client.ts). Either way the silence is a hung process or a host gone
// from the network without closing its connections, which TCP alone notices only after minutes of
// retransmissions. A turn of the checking timer that comes late (this process's event loop was
// busy, and what came may be waiting unread) is no evidence of silence: the count starts again.

/** Silence after which a channel is given up: six reports (or pongs) missed. */
export const CHANNEL_SILENT_MS = 3000;

export class ChannelSilence {
  private readonly turnMs: number;
  private heardAt: number;
  private turnAt: number;

  /** `turnMs`: how often silent() is called. */
  constructor(turnMs: number, now = Date.now()) {
    this.turnMs = turnMs;
    this.heardAt = this.turnAt = now;
  }

  /** Something came on the channel. */
  heard(now = Date.now()): void {
    this.heardAt = now;
  }

  /** One turn of the timer: whether nothing came for CHANNEL_SILENT_MS. */
  silent(now = Date.now()): boolean {
    if (now - this.turnAt > 4 * this.turnMs) this.heardAt = Math.max(this.heardAt, now);
    this.turnAt = now;
    return now - this.heardAt > CHANNEL_SILENT_MS;
  }
}
