// The exit side of a UDP association relayed from another node (relay-server.ts hands over the
// TLS socket once a UDP grant is accepted): frames (dataplane/relay-udp-frames.ts) over the
// stream, one UDP socket per address family bound to the association's egress address when it
// has that family (the request's `slot` picked it, as for TCP). Each destination goes through
// this node's egress policy (resolveHost, as its own UDP): a `check` is answered `allowed` (with
// the address) or `refused`; a datagram to a refused or unresolved name is dropped. Answers are
// framed back only from addresses a datagram was sent to. Nothing is counted on a session here:
// payload bytes are tallied for the entry (takeCarried), as relayed streams are. The association
// lives as long as the stream: its end, an error, a malformed frame or IDLE_MS without a byte
// closes both.
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { isIP } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { resolveHost, type DialOptions } from '../dataplane/outbound.ts';
import { EgressRefused, type EgressPolicy } from '../dataplane/egress.ts';
import { plainAddress } from '../dataplane/socks5.ts';
import { FRAME, FrameReader, encodeFrame, type Frame } from '../dataplane/relay-udp-frames.ts';

const MAX_NAMES = 256;
const MAX_PEERS = 4096;
/** Bytes waiting to be written to the entry before answers are dropped. */
const MAX_BACKLOG = 1 << 20;

/** A destination's address, or why not: the egress policy refused it, or it did not resolve (null). */
type Resolved = { address: string; family: 4 | 6 } | 'forbidden' | null;

export interface UdpExitOptions {
  egress: EgressPolicy;
  dial: DialOptions;
  localAddress?: string;
  idleMs: number;
  /** Payload bytes carried, for the entry's tally. */
  tally: { up: number; down: number };
}

/** Serves one association on `sock` (the `OK` line is written here), `rest`: bytes after the request line. */
export function serveUdpAssociation(sock: TLSSocket, rest: Buffer, o: UdpExitOptions): void {
  const outs: { 4?: UdpSocket; 6?: UdpSocket } = {};
  const names = new Map<string, Promise<Resolved>>();
  const peers = new Set<string>();
  const send = (f: Buffer | undefined) => {
    if (f && !sock.destroyed && sock.writableLength < MAX_BACKLOG) sock.write(f);
  };
  const outOf = (family: 4 | 6): UdpSocket => {
    let s = outs[family];
    if (s) return s;
    s = createSocket(family === 6 ? 'udp6' : 'udp4');
    if (o.localAddress && isIP(o.localAddress) === family) s.bind(0, o.localAddress);
    s.on('message', (m: Buffer, r: RemoteInfo) => {
      const from = plainAddress(r.address);
      if (!peers.has(`${from}|${r.port}`)) return;
      const f = encodeFrame(FRAME.data, { host: from, port: r.port }, m);
      if (!f || sock.destroyed || sock.writableLength >= MAX_BACKLOG) return;
      o.tally.down += m.length;
      sock.write(f);
    });
    s.on('error', () => sock.destroy());
    outs[family] = s;
    return s;
  };
  const resolve = (host: string): Promise<Resolved> => {
    let p = names.get(host);
    if (!p) {
      if (names.size >= MAX_NAMES) names.clear();
      p = resolveHost(host, o.egress, o.dial).then((r) => ({ address: plainAddress(r.address), family: r.family }), (err) => (err instanceof EgressRefused ? 'forbidden' as const : null));
      names.set(host, p);
    }
    return p;
  };
  const onFrame = (f: Frame) => {
    if (f.type === FRAME.check) {
      void resolve(f.to.host).then((r) => send(r && r !== 'forbidden' ? encodeFrame(FRAME.allowed, f.to, Buffer.from(r.address)) : encodeFrame(FRAME.refused, f.to, Buffer.from(r ?? 'unresolved'))));
    } else if (f.type === FRAME.data && f.to.port !== 0 && f.payload.length > 0) {
      void resolve(f.to.host).then((r) => {
        if (!r || r === 'forbidden' || sock.destroyed) return; // refused by the egress policy, or not resolved: dropped
        const key = `${r.address}|${f.to.port}`;
        if (!peers.has(key)) {
          if (peers.size >= MAX_PEERS) peers.delete(peers.values().next().value!);
          peers.add(key);
        }
        o.tally.up += f.payload.length;
        outOf(r.family).send(f.payload, f.to.port, r.address);
      });
    } else sock.destroy(); // the entry sends only checks and datagrams
  };
  const reader = new FrameReader(onFrame);
  const read = (b: Buffer) => {
    if (!reader.push(b)) sock.destroy();
  };
  sock.once('close', () => {
    for (const s of [outs[4], outs[6]]) {
      try { s?.close(); } catch { /* closed */ }
    }
  });
  sock.on('error', () => sock.destroy());
  sock.setTimeout(o.idleMs, () => sock.destroy());
  sock.write('OK\n');
  if (rest.length) read(rest);
  sock.on('data', read);
  sock.resume();
}
