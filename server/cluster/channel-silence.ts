// A node's channel that carries nothing for NODE_SILENT_MS is closed as lost (node-connection.ts),
// which marks the node down NODE_LOST_SECONDS later. A node reports at least every 500 ms
// (node/reporter.ts), so silence means a hung node or a host gone from the network without closing
// its connections: TCP alone notices that only after minutes of retransmissions, and the up window
// (NODE_UP_SECONDS after its last report) only after 10 s. A turn of the checking timer that comes
// late (this process's event loop was busy, and what the node sent may be waiting unread) is no
// evidence of silence: the count starts again from it.

/** Silence after which a channel is closed as lost: six reports missed. */
export const NODE_SILENT_MS = 3000;

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

  /** One turn of the timer: whether nothing came for NODE_SILENT_MS. */
  silent(now = Date.now()): boolean {
    if (now - this.turnAt > 4 * this.turnMs) this.heardAt = Math.max(this.heardAt, now);
    this.turnAt = now;
    return now - this.heardAt > NODE_SILENT_MS;
  }
}
