// SOCKS5 UDP ASSOCIATE (RFC 1928 section 7): a UDP relay socket bound, on the address the
// client reached, for as long as the control connection lives (its end, a pause, a cap or the
// idle timeout closes both). Datagrams are taken from the client's address only (the control
// connection's IP; the port the request named, else the first datagram's), fragments (FRAG != 0)
// and malformed headers are dropped, and each destination goes through the egress policy (the
// name resolved first, the address checked, as for CONNECT) before anything is sent. Answers are
// taken only from the addresses the client sent to. Only the payload is counted and limited
// (one Flow per direction, datagrams whole: one that does not fit a cap is dropped); the SOCKS
// UDP header is not. The outbound sockets leave from the exit's source address (exits.ts) when
// it has one of their family. Support lists the association (transport socks5) with the first
// destination it sent to; a destination refused by the egress policy is recorded once per name.
// For a place served only by another node the datagrams go through that node's geo relay
// instead (relay-udp-dial.ts: one relay connection per association, each name checked with the
// exit's egress policy before its first datagram, answers only from where it sent): the
// association, its client checks and its counting stay here, the exit counts nothing.
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { isIP } from 'node:net';
import { Flow } from './flow.ts';
import type { Connection } from './relay.ts';
import { resolveHost } from './outbound.ts';
import { EgressRefused } from './egress.ts';
import type { ProxyContext } from './proxy-admission.ts';
import type { RelayUdpChannel } from './relay-udp-dial.ts';
import { REP, type Address, type ReplyCode, encodeDatagramHeader, encodeReply, parseDatagram, plainAddress } from './socks5.ts';

/** Names resolved per association, and peers an association has sent to, at most. */
const MAX_NAMES = 256;
const MAX_PEERS = 4096;
/** Datagrams waiting in a direction (shaping, a full socket) before new ones are dropped. */
const MAX_QUEUE = 64;

type Resolved = { address: string; family: 4 | 6 } | null;

/** Where datagrams leave: from here (the exit's source address, if any), or through a relay node. */
export type UdpWay = { egressAddress?: string } | { relay: RelayUdpChannel };

/** One association: the relay socket, the outbound sockets (one per address family), a Flow per direction. */
class Association {
  private readonly ctx: ProxyContext;
  /** The exit's source address (exits.ts), for the outbound sockets of its family. */
  private readonly egressAddress: string | undefined;
  private readonly channel: RelayUdpChannel | undefined;
  private readonly conn: Connection;
  private readonly clientIp: string;
  private clientPort: number;
  readonly relay: UdpSocket;
  private readonly outs: { 4?: UdpSocket; 6?: UdpSocket } = {};
  private readonly names = new Map<string, Promise<Resolved>>();
  private readonly peers = new Set<string>();
  /** Where each payload goes (up) or came from (down): datagrams are pushed whole, so the sink gets the same Buffer. */
  private readonly addressOf = new WeakMap<Buffer, Address>();
  private readonly up: Flow;
  private readonly down: Flow;

  constructor(ctx: ProxyContext, conn: Connection, requested: Address, local: string, way: UdpWay) {
    this.ctx = ctx;
    this.egressAddress = 'relay' in way ? undefined : way.egressAddress;
    const channel = (this.channel = 'relay' in way ? way.relay : undefined);
    if (channel) {
      channel.onDatagram = (from, payload) => this.answer(from, payload);
      channel.onClose = () => conn.close('udp_error');
    }
    this.conn = conn;
    this.clientIp = plainAddress(conn.client.remote);
    this.clientPort = requested.port || 0;
    this.relay = createSocket(isIP(local) === 6 ? 'udp6' : 'udp4');
    const noop = { pause() {}, resume() {} };
    const lease = conn.lease!;
    this.up = new Flow(lease, 'up', {
      write: (b) => {
        const to = this.addressOf.get(b);
        if (to && this.channel) this.channel.send(to, b);
        else if (to) this.outOf(isIP(to.host) === 6 ? 6 : 4).send(b, to.port, to.host);
        return true;
      },
      onWritable: (cb) => setImmediate(cb),
    }, noop, { atomic: true, maxQueue: MAX_QUEUE });
    this.down = new Flow(lease, 'down', {
      write: (b) => {
        const from = this.addressOf.get(b);
        if (from) this.relay.send([encodeDatagramHeader(from), b], this.clientPort, this.clientIp);
        return true;
      },
      onWritable: (cb) => setImmediate(cb),
    }, noop, { atomic: true, maxQueue: MAX_QUEUE });
  }

  /** The outbound socket of a family, made on first use; answers only from peers the client sent to. */
  private outOf(family: 4 | 6): UdpSocket {
    let s = this.outs[family];
    if (s) return s;
    s = createSocket(family === 6 ? 'udp6' : 'udp4');
    const egressAddress = this.egressAddress;
    if (egressAddress && isIP(egressAddress) === family) s.bind(0, egressAddress);
    s.on('message', (m: Buffer, r: RemoteInfo) => {
      const from = plainAddress(r.address);
      if (this.peers.has(`${from}|${r.port}`)) this.answer({ host: from, port: r.port }, m);
    });
    s.on('error', () => this.conn.close('udp_error'));
    this.outs[family] = s;
    return s;
  }

  /** An answer from a destination sent to (here, or as the relay node saw it), counted down to the client. */
  private answer(from: Address, payload: Buffer): void {
    this.conn.lastActive = performance.now();
    this.addressOf.set(payload, from);
    this.down.push(payload);
  }

  /** Support sees the egress policy's refusal (here or at the relay node), once per name and association. */
  private forbidden(): void {
    const lease = this.conn.lease;
    if (lease) this.ctx.runtime.refused(lease.session.id, 'destination_forbidden', this.conn.transport, this.conn.client.remote);
  }

  /** A destination's address through the DNS timeout and the egress policy (null: refused or unresolved), cached. */
  private resolve(host: string): Promise<Resolved> {
    let p = this.names.get(host);
    if (!p && this.channel) {
      if (this.names.size >= MAX_NAMES) this.names.clear();
      // the relay node's policy decides; its answer is the address to send to
      p = this.channel.check(host).then((address) => {
        if (address === 'forbidden') this.forbidden();
        return address && isIP(address) ? { address, family: isIP(address) as 4 | 6 } : null;
      });
      this.names.set(host, p);
    } else if (!p) {
      if (this.names.size >= MAX_NAMES) this.names.clear();
      p = resolveHost(host, this.ctx.egress, this.ctx.dial).then((r) => ({ address: plainAddress(r.address), family: r.family }), (err: Error) => {
        // once per name and association (the answer is kept): support sees the egress policy's refusal
        if (err instanceof EgressRefused) this.forbidden();
        return null;
      });
      this.names.set(host, p);
    }
    return p;
  }

  /** A datagram on the relay socket: the client's, whole, to an allowed destination, or dropped. */
  fromClient(m: Buffer, r: RemoteInfo): void {
    if (plainAddress(r.address) !== this.clientIp || (this.clientPort && r.port !== this.clientPort)) return;
    const d = parseDatagram(m);
    if (!d || d.frag !== 0 || d.port === 0 || d.payload.length === 0) return;
    this.clientPort = r.port;
    this.conn.lastActive = performance.now();
    // support lists an association with the first destination it sends to
    if (!this.conn.destination) this.conn.destination = { host: d.host, port: d.port };
    void this.resolve(d.host).then((to) => {
      if (!to || this.conn.closed) return; // refused by the egress policy, or not resolved: dropped
      const key = `${to.address}|${d.port}`;
      if (!this.peers.has(key)) {
        if (this.peers.size >= MAX_PEERS) this.peers.delete(this.peers.values().next().value!);
        this.peers.add(key);
      }
      const payload = Buffer.from(d.payload);
      this.addressOf.set(payload, { host: to.address, port: d.port });
      this.up.push(payload);
    });
  }

  close(): void {
    this.up.stop();
    this.down.stop();
    this.channel?.close();
    for (const s of [this.relay, this.outs[4], this.outs[6]]) {
      try { s?.close(); } catch { /* closed */ }
    }
  }
}

/**
 * Binds the association's relay socket and answers the request; `fail` answers the client when
 * that is impossible. `requested`: the request's DST.ADDR/DST.PORT (the port the client will
 * send from, or 0); `way`: the exit's source address (exits.ts), if any, or the open relay channel.
 */
export function startAssociation(ctx: ProxyContext, conn: Connection, requested: Address, way: UdpWay, fail: (rep: ReplyCode, bound?: Address) => void): void {
  const local = plainAddress(conn.client.local ?? (isIP(plainAddress(conn.client.remote)) === 6 ? '::' : '0.0.0.0'));
  const a = new Association(ctx, conn, requested, local, way);
  const relay = a.relay;
  conn.cleanup = () => a.close();
  relay.once('error', () => fail(REP.generalFailure));
  relay.bind(0, local, () => {
    if (conn.closed) return;
    relay.removeAllListeners('error');
    relay.on('error', () => conn.close('udp_error'));
    relay.on('message', (m: Buffer, r: RemoteInfo) => a.fromClient(m, r));
    conn.startOwn();
    // The control connection carries nothing more: whatever the client sends on it is dropped.
    conn.preamble = () => {};
    conn.client.write(encodeReply(REP.succeeded, { host: local, port: relay.address().port }));
  });
}
