// The entry side of a UDP association through another node's geo relay (socks5-udp.ts uses it
// for a place served only there): ONE TLS connection to the exit node per association, its
// certificate checked against the pin, a request line with a UDP grant (relay-grant.ts)
// `{"from","exp","session","nonce","time","grant","udp":true[,"slot"]}`, the answer `OK` (or
// `{"error"}`), then frames both ways (relay-udp-frames.ts). A destination name is checked
// with the exit's egress policy (`check`, answered `allowed` with its address or `refused`)
// before any of its datagrams is sent, so a refused datagram is dropped here, uncounted.
// Datagrams are counted by the caller (on the entry's session), never by the exit.
import type { TLSSocket } from 'node:tls';
import type { GeoRoute } from './api.ts';
import type { Address } from './socks5.ts';
import { signRelayGrant } from './relay-grant.ts';
import { openRelay } from './relay-dial.ts';
import { FRAME, FrameReader, encodeFrame, wireHost, type Frame } from './relay-udp-frames.ts';

/** Checks waiting for the exit's answer at most; past it new names are refused until answers come. */
const MAX_PENDING = 256;
/** Bytes waiting to be written to the exit before datagrams are dropped. */
const MAX_BACKLOG = 1 << 20;

export interface RelayUdpChannel {
  /** The destination's address if the exit's egress policy allows the name; else `forbidden` (that policy refused it) or null (unresolved, no answer in time). */
  check(host: string): Promise<string | 'forbidden' | null>;
  /** Frames a datagram to the exit; false when dropped (too large, backlog full, closed). */
  send(to: Address, payload: Buffer): boolean;
  /** Answers from the exit: set by the association. */
  onDatagram: (from: Address, payload: Buffer) => void;
  /** Called once when the relay connection ends. */
  onClose: () => void;
  close(): void;
}

/** Opens the relay connection of one association of `sessionId`; rejects when the relay cannot be reached or refuses. */
export async function dialRelayUdp(route: Extract<GeoRoute, { via: 'relay' }>, sessionId: string, timeoutMs: number): Promise<RelayUdpChannel> {
  const { tls, rest } = await openRelay(route, { ...signRelayGrant(route, sessionId, { kind: 'udp' }), udp: true }, timeoutMs);
  return channel(tls, rest, timeoutMs);
}

/** The association's side of an open relay connection (`rest`: frames that came with the answer). */
function channel(tls: TLSSocket, rest: Buffer, timeoutMs: number): RelayUdpChannel {
  const pending = new Map<string, Array<(address: string | 'forbidden' | null) => void>>();
  const answer = (host: string, address: string | 'forbidden' | null) => {
    for (const cb of pending.get(host) ?? []) cb(address);
    pending.delete(host);
  };
  const c: RelayUdpChannel = {
    onDatagram: () => {},
    onClose: () => {},
    check: (name) => new Promise((resolve) => {
      const host = wireHost(name);
      if (tls.destroyed || (!pending.has(host) && pending.size >= MAX_PENDING)) return resolve(null);
      const waiting = pending.get(host);
      if (waiting) return void waiting.push(resolve);
      const mine = [resolve];
      pending.set(host, mine);
      setTimeout(() => pending.get(host) === mine && answer(host, null), timeoutMs).unref();
      tls.write(encodeFrame(FRAME.check, { host, port: 0 })!);
    }),
    send: (to, payload) => {
      const f = encodeFrame(FRAME.data, to, payload);
      if (!f || tls.destroyed || tls.writableLength >= MAX_BACKLOG) return false;
      tls.write(f);
      return true;
    },
    close: () => void tls.destroy(),
  };
  const reader = new FrameReader((f: Frame) => {
    if (f.type === FRAME.data) c.onDatagram(f.to, f.payload);
    else if (f.type === FRAME.allowed) answer(f.to.host, f.payload.toString('latin1') || null);
    else if (f.type === FRAME.refused) answer(f.to.host, f.payload.toString('latin1') === 'forbidden' ? 'forbidden' : null);
  });
  const read = (b: Buffer) => {
    if (!reader.push(b)) tls.destroy();
  };
  tls.on('error', () => tls.destroy());
  tls.once('close', () => {
    for (const host of [...pending.keys()]) answer(host, null);
    c.onClose();
  });
  setImmediate(() => {
    if (rest.length) read(rest);
    tls.on('data', read);
    tls.resume();
  });
  return c;
}
