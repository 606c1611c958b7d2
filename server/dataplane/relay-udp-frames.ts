// The frames of a UDP association carried over the geo relay's TLS stream (relay-udp-dial.ts at
// the entry, node/relay-udp.ts at the exit), after the `OK` answer line, both ways:
//   LEN(2, big-endian: the bytes after it) TYPE(1) ATYP ADDR PORT (SOCKS5 address encoding) PAYLOAD
// TYPE: 0 a datagram (entry → exit: send to the address; exit → entry: an answer from it),
// 1 check (entry → exit: may the name be sent to? no payload), 2 allowed (exit → entry: the
// name's address, as text, in the payload), 3 refused (exit → entry: `forbidden`, the exit's
// egress policy refused the name, or `unresolved`). A datagram's payload is at most MAX_DATAGRAM bytes:
// larger ones are never framed (dropped by the sender) and a frame longer than LEN allows is
// a protocol error (the reader stops).
import { type Address, encodeAddress, parseAddress } from './socks5.ts';

export const MAX_DATAGRAM = 65507;
export const FRAME = { data: 0, check: 1, allowed: 2, refused: 3 } as const;
export type FrameType = (typeof FRAME)[keyof typeof FRAME];

export interface Frame {
  type: FrameType;
  to: Address;
  payload: Buffer;
}

/** One frame, or undefined when the payload is over MAX_DATAGRAM or the frame over 65535 bytes. */
export function encodeFrame(type: FrameType, to: Address, payload: Buffer = Buffer.alloc(0)): Buffer | undefined {
  if (payload.length > MAX_DATAGRAM) return undefined;
  const addr = encodeAddress(to.host, to.port);
  const len = 1 + addr.length + payload.length;
  if (len > 0xffff) return undefined;
  const head = Buffer.alloc(3);
  head.writeUInt16BE(len, 0);
  head[2] = type;
  return Buffer.concat([head, addr, payload]);
}

/** Reads frames from a stream's chunks; a malformed frame makes `push` return false (stop reading). */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  private readonly onFrame: (f: Frame) => void;
  constructor(onFrame: (f: Frame) => void) {
    this.onFrame = onFrame;
  }
  push(chunk: Buffer): boolean {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 2) {
      const len = this.buf.readUInt16BE(0);
      if (this.buf.length < 2 + len) return true;
      const body = this.buf.subarray(2, 2 + len);
      this.buf = this.buf.subarray(2 + len);
      if (len < 1 || body[0] > FRAME.refused) return false;
      const a = parseAddress(body, 1);
      if (a.kind !== 'ok') return false;
      const payload = body.subarray(1 + a.length);
      if (payload.length > MAX_DATAGRAM) return false;
      this.onFrame({ type: body[0] as FrameType, to: { host: a.host, port: a.port }, payload: Buffer.from(payload) });
    }
    return true;
  }
}

/** A host as it reads back from its encoding (an IPv6 literal's groups written out), for matching answers. */
export function wireHost(host: string): string {
  const a = parseAddress(encodeAddress(host, 0), 0);
  return a.kind === 'ok' ? a.host : host;
}
