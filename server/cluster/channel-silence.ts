// Silence on a node's channel, watched from both ends. The control plane closes a channel on which
// nothing came for CHANNEL_SILENT_MS as lost (node-connection.ts), which marks the node down
// NODE_LOST_SECONDS later: a node reports every 500 ms (node/reporter.ts) and pings as often. The
// node, hearing nothing for CHANNEL_SILENT_MS (the control plane answers its pings, and pings it every
// second: a pong waits behind the node's own large report on a slow uplink, a ping does not), connects
// again, to the next control URL (node/channel-client.ts). Either way the silence is a hung process or a
// host gone from the network without closing its connections, which TCP alone notices only after
// minutes of retransmissions. What counts is bytes read from the socket, not whole messages, so a
// large frame arriving over a slow link is not silence. A turn of the checking timer that comes
// late (this process's event loop was busy, and what came may be waiting unread) is no evidence of
// silence: the count starts again from it.

/** Silence after which a channel is given up: six reports (or pongs) missed. */
export const CHANNEL_SILENT_MS = 3000;

/** The socket under the channel (net.Socket and tls.TLSSocket count what they read). */
export interface ReadCounter {
  readonly bytesRead?: number;
}

export class ChannelSilence {
  private readonly turnMs: number;
  private readonly socket: ReadCounter;
  private lastRead: number | undefined;
  private heardAt: number;
  private turnAt: number;

  /** `turnMs`: how often silent() is called. */
  constructor(turnMs: number, socket: ReadCounter, now = Date.now()) {
    this.turnMs = turnMs;
    this.socket = socket;
    this.lastRead = socket.bytesRead;
    this.heardAt = this.turnAt = now;
  }

  /** One turn of the timer: whether nothing was read for CHANNEL_SILENT_MS (never, for a socket that does not count). */
  silent(now = Date.now()): boolean {
    const read = this.socket.bytesRead;
    if (typeof read !== 'number') return false;
    if (read !== this.lastRead || now - this.turnAt > 4 * this.turnMs) this.heardAt = now;
    this.lastRead = read;
    this.turnAt = now;
    return now - this.heardAt > CHANNEL_SILENT_MS;
  }
}
