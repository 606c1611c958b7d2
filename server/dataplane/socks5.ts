// SOCKS5 (RFC 1928) with user name/password authentication (RFC 1929), as bytes: parsers of
// what a client sends (greeting, credentials, request, UDP datagram header) and encoders of
// what the proxy answers. Pure: no sockets, no state; every parser bounds what it reads and
// answers 'more' (not enough bytes yet), 'error' (close the connection) or the parsed value
// with the number of bytes it took.
import { isIP } from 'node:net';

export const SOCKS_VERSION = 0x05;
/** RFC 1929 sub-negotiation version. */
export const AUTH_VERSION = 0x01;
export const METHOD_USERPASS = 0x02;
export const METHOD_NONE_ACCEPTABLE = 0xff;

export const CMD_CONNECT = 0x01;
export const CMD_BIND = 0x02;
export const CMD_UDP_ASSOCIATE = 0x03;

/** Reply codes (RFC 1928 section 6). */
export const REP = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;
export type ReplyCode = (typeof REP)[keyof typeof REP];

const ATYP_V4 = 0x01;
const ATYP_DOMAIN = 0x03;
const ATYP_V6 = 0x04;

export type Parsed<T> = { kind: 'more' } | { kind: 'error'; reason: string; reply?: ReplyCode } | ({ kind: 'ok'; length: number } & T);

const MORE = { kind: 'more' } as const;
const fail = (reason: string, reply?: ReplyCode) => ({ kind: 'error', reason, ...(reply !== undefined ? { reply } : {}) }) as const;

/** VER NMETHODS METHODS... */
export function parseGreeting(b: Buffer): Parsed<{ methods: number[] }> {
  if (b.length < 1) return MORE;
  if (b[0] !== SOCKS_VERSION) return fail('not SOCKS version 5');
  if (b.length < 2) return MORE;
  const n = b[1];
  if (n === 0) return fail('no authentication method offered');
  if (b.length < 2 + n) return MORE;
  return { kind: 'ok', length: 2 + n, methods: [...b.subarray(2, 2 + n)] };
}

/** RFC 1929: VER ULEN UNAME PLEN PASSWD (each 1 to 255 bytes). */
export function parseUserPass(b: Buffer): Parsed<{ user: string; pass: string }> {
  if (b.length < 1) return MORE;
  if (b[0] !== AUTH_VERSION) return fail('not user name/password sub-negotiation version 1');
  if (b.length < 2) return MORE;
  const ulen = b[1];
  if (ulen === 0) return fail('empty user name');
  if (b.length < 3 + ulen) return MORE;
  const plen = b[2 + ulen];
  if (plen === 0) return fail('empty password');
  const end = 3 + ulen + plen;
  if (b.length < end) return MORE;
  const user = b.subarray(2, 2 + ulen).toString('utf8');
  const pass = b.subarray(3 + ulen, end).toString('utf8');
  return { kind: 'ok', length: end, user, pass };
}

export interface Address {
  host: string;
  port: number;
}

/** ATYP ADDR PORT at `at`: the address and where it ends; 'more', or an error with reply 0x08. */
export function parseAddress(b: Buffer, at: number): Parsed<Address> {
  if (b.length < at + 1) return MORE;
  const atyp = b[at];
  let host: string;
  let end: number;
  if (atyp === ATYP_V4) {
    end = at + 1 + 4;
    if (b.length < end + 2) return MORE;
    host = [...b.subarray(at + 1, end)].join('.');
  } else if (atyp === ATYP_V6) {
    end = at + 1 + 16;
    if (b.length < end + 2) return MORE;
    const groups: string[] = [];
    for (let i = at + 1; i < end; i += 2) groups.push(b.readUInt16BE(i).toString(16));
    host = groups.join(':');
  } else if (atyp === ATYP_DOMAIN) {
    if (b.length < at + 2) return MORE;
    const n = b[at + 1];
    end = at + 2 + n;
    if (b.length < end + 2) return MORE;
    host = b.subarray(at + 2, end).toString('latin1');
    // a name, never an address literal smuggled through the name form, never empty or with controls
    if (n === 0 || !/^[A-Za-z0-9._-]+$/.test(host)) return fail('invalid domain name', REP.notAllowed);
  } else {
    return fail(`address type ${atyp} not supported`, REP.addressTypeNotSupported);
  }
  return { kind: 'ok', length: end + 2 - at, host, port: b.readUInt16BE(end) };
}

/** VER CMD RSV ATYP DST.ADDR DST.PORT */
export function parseRequest(b: Buffer): Parsed<Address & { command: number }> {
  if (b.length < 3) return b.length >= 1 && b[0] !== SOCKS_VERSION ? fail('not SOCKS version 5') : MORE;
  if (b[0] !== SOCKS_VERSION) return fail('not SOCKS version 5');
  if (b[2] !== 0) return fail('reserved byte not zero', REP.generalFailure);
  const a = parseAddress(b, 3);
  if (a.kind !== 'ok') return a;
  return { kind: 'ok', length: 3 + a.length, command: b[1], host: a.host, port: a.port };
}

/** ATYP ADDR PORT for an address (a literal IPv4 or IPv6 address, else a domain name). */
export function encodeAddress(host: string, port: number): Buffer {
  const fam = isIP(host);
  let addr: Buffer;
  if (fam === 4) addr = Buffer.from([ATYP_V4, ...host.split('.').map(Number)]);
  else if (fam === 6) {
    const v6 = Buffer.alloc(17);
    v6[0] = ATYP_V6;
    const [head, tail] = host.split('%')[0].split('::');
    const h = head ? head.split(':') : [];
    const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
    const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
    groups.forEach((g, i) => v6.writeUInt16BE(parseInt(g, 16) || 0, 1 + i * 2));
    addr = v6;
  } else {
    const name = Buffer.from(host, 'latin1').subarray(0, 255);
    addr = Buffer.concat([Buffer.from([ATYP_DOMAIN, name.length]), name]);
  }
  const p = Buffer.alloc(2);
  p.writeUInt16BE(port);
  return Buffer.concat([addr, p]);
}

/** The IPv4 form of an IPv4-mapped IPv6 address (::ffff:a.b.c.d), else the address as is. */
export function plainAddress(ip: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip) ? ip.slice(7) : ip;
}

/** VER METHOD */
export function encodeMethod(method: number): Buffer {
  return Buffer.from([SOCKS_VERSION, method]);
}

/** RFC 1929 answer: VER STATUS (0 success, anything else failure). */
export function encodeAuthStatus(ok: boolean): Buffer {
  return Buffer.from([AUTH_VERSION, ok ? 0x00 : 0x01]);
}

/** VER REP RSV ATYP BND.ADDR BND.PORT (0.0.0.0:0 unless given). */
export function encodeReply(rep: ReplyCode, bound: Address = { host: '0.0.0.0', port: 0 }): Buffer {
  return Buffer.concat([Buffer.from([SOCKS_VERSION, rep, 0x00]), encodeAddress(plainAddress(bound.host), bound.port)]);
}

/** A datagram of a UDP association: RSV(2) FRAG ATYP DST.ADDR DST.PORT DATA. */
export interface Datagram extends Address {
  frag: number;
  payload: Buffer;
}

export function parseDatagram(b: Buffer): Datagram | undefined {
  if (b.length < 4 || b[0] !== 0 || b[1] !== 0) return undefined;
  const a = parseAddress(b, 3);
  if (a.kind !== 'ok') return undefined;
  return { frag: b[2], host: a.host, port: a.port, payload: b.subarray(3 + a.length) };
}

/** The header of a datagram the relay sends to the client, from `from` (an address literal). */
export function encodeDatagramHeader(from: Address): Buffer {
  return Buffer.concat([Buffer.from([0, 0, 0]), encodeAddress(plainAddress(from.host), from.port)]);
}
