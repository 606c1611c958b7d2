// SOCKS5 UDP ASSOCIATE (RFC 1928 section 7): a UDP relay socket bound, on the address the
// client reached, for as long as the control connection lives (its end, a pause, a cap or the
// idle timeout closes both). Datagrams are taken from the client's address only (the control
// connection's IP; the port the request named, else the first datagram's), fragments (FRAG != 0)
// and malformed headers are dropped, and each destination goes through the egress policy (the
// name resolved first, the address checked, as for CONNECT) before anything is sent. Answers are
// taken only from the addresses the client sent to. Only the payload is counted and limited
// (one Flow per direction, datagrams whole: one that does not fit a cap is dropped); the SOCKS
// UDP header is not.
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { isIP } from 'node:net';
import { Flow } from './flow.ts';
import type { Connection } from './relay.ts';
import { resolveHost } from './outbound.ts';
import type { ProxyContext } from './proxy-admission.ts';
import { REP, type Address, type ReplyCode, encodeDatagramHeader, encodeReply, parseDatagram, plainAddress } from './socks5.ts';

/** Names resolved per association, and peers an association has sent to, at most. */
const MAX_NAMES = 256;
const MAX_PEERS = 4096;
/** Datagrams waiting in a direction (shaping, a full socket) before new ones are dropped. */
const MAX_QUEUE = 64;

type Resolved = { address: string; family: 4 | 6 } | null;

/**
 * Binds the association's relay socket; `fail` answers the client when that is impossible.
 * `requested`: the client's DST.ADDR/DST.PORT of the request (the port it will send from, or 0).
 */
export function startAssociation(ctx: ProxyContext, conn: Connection, requested: Address, fail: (rep: ReplyCode, bound?: Address) => void): void {
  const lease = conn.lease!;
  const clientIp = plainAddress(conn.client.remote);
  const local = plainAddress(conn.client.local ?? (isIP(clientIp) === 6 ? '::' : '0.0.0.0'));
  const relay = createSocket(isIP(local) === 6 ? 'udp6' : 'udp4');
  const outs: { 4?: UdpSocket; 6?: UdpSocket } = {};
  let clientPort = requested.port || 0;
  const names = new Map<string, Promise<Resolved>>();
  const peers = new Set<string>();
  /** Where each payload goes (up) or came from (down): datagrams are pushed whole, so the sink gets the same Buffer. */
  const addressOf = new WeakMap<Buffer, Address>();
  const noop = { pause() {}, resume() {} };
  const up = new Flow(lease, 'up', {
    write: (b) => {
      const to = addressOf.get(b);
      if (to) outOf(isIP(to.host) === 6 ? 6 : 4).send(b, to.port, to.host);
      return true;
    },
    onWritable: (cb) => setImmediate(cb),
  }, noop, { atomic: true, maxQueue: MAX_QUEUE });
  const down = new Flow(lease, 'down', {
    write: (b) => {
      const from = addressOf.get(b);
      if (from) relay.send([encodeDatagramHeader(from), b], clientPort, clientIp);
      return true;
    },
    onWritable: (cb) => setImmediate(cb),
  }, noop, { atomic: true, maxQueue: MAX_QUEUE });

  const outOf = (family: 4 | 6): UdpSocket => {
    let s = outs[family];
    if (s) return s;
    s = createSocket(family === 6 ? 'udp6' : 'udp4');
    const egressAddress = ctx.dial.localAddress;
    if (egressAddress && isIP(egressAddress) === family) s.bind(0, egressAddress);
    s.on('message', (m: Buffer, r: RemoteInfo) => {
      const from = plainAddress(r.address);
      if (!peers.has(`${from}|${r.port}`)) return;
      conn.lastActive = performance.now();
      addressOf.set(m, { host: from, port: r.port });
      down.push(m);
    });
    s.on('error', () => conn.close('udp_error'));
    outs[family] = s;
    return s;
  };
  const resolve = (host: string): Promise<Resolved> => {
    let p = names.get(host);
    if (!p) {
      if (names.size >= MAX_NAMES) names.clear();
      p = resolveHost(host, ctx.egress, ctx.dial).then((r) => ({ address: plainAddress(r.address), family: r.family }), () => null);
      names.set(host, p);
    }
    return p;
  };
  const fromClient = (m: Buffer, r: RemoteInfo) => {
    if (plainAddress(r.address) !== clientIp || (clientPort && r.port !== clientPort)) return;
    const d = parseDatagram(m);
    if (!d || d.frag !== 0 || d.port === 0 || d.payload.length === 0) return;
    clientPort = r.port;
    conn.lastActive = performance.now();
    void resolve(d.host).then((to) => {
      if (!to || conn.closed) return; // refused by the egress policy, or not resolved: dropped
      const key = `${to.address}|${d.port}`;
      if (!peers.has(key)) {
        if (peers.size >= MAX_PEERS) peers.delete(peers.values().next().value!);
        peers.add(key);
      }
      const payload = Buffer.from(d.payload);
      addressOf.set(payload, { host: to.address, port: d.port });
      up.push(payload);
    });
  };

  conn.cleanup = () => {
    up.stop();
    down.stop();
    for (const s of [relay, outs[4], outs[6]]) {
      try { s?.close(); } catch { /* closed */ }
    }
  };
  relay.once('error', () => fail(REP.generalFailure));
  relay.bind(0, local, () => {
    if (conn.closed) return;
    relay.removeAllListeners('error');
    relay.on('error', () => conn.close('udp_error'));
    relay.on('message', fromClient);
    lease.commit();
    // The control connection carries nothing more: whatever the client sends on it is dropped.
    conn.preamble = () => {};
    conn.client.write(encodeReply(REP.succeeded, { host: local, port: relay.address().port }));
  });
}
