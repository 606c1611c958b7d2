// The entry side of a UDP association through another node's geo relay (socks5-udp.ts uses it
// for a place served only there): ONE TLS connection to the exit node per association, its
// certificate checked against the pin, a request line with a UDP grant (relay-grant.ts)
// `{"from","exp","session","nonce","time","grant","udp":true[,"slot"]}`, the answer `OK` (or
// `{"error"}`), then frames both ways (relay-udp-frames.ts). A destination name is checked
// with the exit's egress policy (`check`, answered `allowed` with its address or `refused`)
// before any of its datagrams is sent, so a refused datagram is dropped here, uncounted.
// Datagrams are counted by the caller (on the entry's session), never by the exit.
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import type { GeoRoute } from './api.ts';
import type { Address } from './socks5.ts';
import { signRelayGrant } from './relay-grant.ts';
import { peerPin } from './relay-dial.ts';
import { FRAME, FrameReader, encodeFrame, wireHost, type Frame } from './relay-udp-frames.ts';

const MAX_ANSWER = 4096;
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
export function dialRelayUdp(route: Extract<GeoRoute, { via: 'relay' }>, sessionId: string, timeoutMs: number): Promise<RelayUdpChannel> {
  return new Promise((resolve, reject) => {
    const tls = tlsConnect({ host: route.host, port: route.port, rejectUnauthorized: false, ALPNProtocols: ['vad-relay'] });
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      tls.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error(`the relay at node ${route.node} did not answer in time`)), timeoutMs);
    tls.on('error', fail);
    tls.once('close', () => fail(new Error(`the relay at node ${route.node} closed`)));
    tls.once('secureConnect', () => {
      if (peerPin(tls) !== route.pcs) return fail(new Error(`the relay at node ${route.node} has another certificate than its pin`));
      tls.write(`${JSON.stringify({ ...signRelayGrant(route, sessionId, { kind: 'udp' }), udp: true, ...(route.slot !== undefined ? { slot: route.slot } : {}) })}\n`);
    });
    let head = Buffer.alloc(0);
    const onHead = (b: Buffer) => {
      head = Buffer.concat([head, b]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) return void (head.length > MAX_ANSWER && fail(new Error('the relay answered nonsense')));
      tls.off('data', onHead);
      const line = head.subarray(0, nl).toString('utf8');
      if (line !== 'OK') return fail(new Error(`the relay at node ${route.node} refused UDP: ${line.slice(0, 80)}`));
      settled = true;
      clearTimeout(timer);
      resolve(channel(tls, head.subarray(nl + 1), timeoutMs));
    };
    tls.on('data', onHead);
  });
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
  tls.removeAllListeners('error');
  tls.removeAllListeners('close');
  tls.on('error', () => tls.destroy());
  tls.once('close', () => {
    for (const host of [...pending.keys()]) answer(host, null);
    c.onClose();
  });
  setImmediate(() => {
    if (rest.length) read(rest);
    tls.on('data', read);
  });
  return c;
}
