// VLESS request header (protocol version 0), parsed incrementally.
//
//   version(1)=0 | id(16) | addonsLen(1) | addons(addonsLen) | command(1)
//   command 1 (TCP) / 2 (UDP): port(2, big endian) | addrType(1) | address
//     addrType 1: IPv4 (4 bytes), 2: domain (len(1) + bytes), 3: IPv6 (16 bytes)
//   command 3 (mux): nothing follows; we refuse it.
// The response header is version(1)=0 | addonsLen(1)=0.

export const VLESS_RESPONSE_HEADER = Buffer.from([0, 0]);
/** Longest possible header: 1 + 16 + 1 + 255 + 1 + 2 + 1 + 1 + 255. */
export const VLESS_MAX_HEADER = 533;

export type VlessCommand = 'tcp' | 'udp' | 'mux';

export interface VlessHeader {
  id: string;
  command: VlessCommand;
  port: number;
  /** Dotted IPv4, compressed IPv6 or a domain name. */
  address: string;
  addressType: 'ipv4' | 'domain' | 'ipv6';
}

export type ParseResult =
  | { kind: 'more' }
  | { kind: 'error'; reason: string }
  | { kind: 'ok'; header: VlessHeader; length: number };

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function formatUuid(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) s += '-';
    s += HEX[b[i]];
  }
  return s;
}

export function parseUuid(id: string): Buffer | undefined {
  const hex = id.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) return undefined;
  return Buffer.from(hex, 'hex');
}

function formatIpv6(b: Uint8Array, off: number): string {
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(((b[off + 2 * i] << 8) | b[off + 2 * i + 1]).toString(16));
  // compress the longest run of zero groups (RFC 5952)
  let bestStart = -1, bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  if (bestStart < 0) return groups.join(':');
  return groups.slice(0, bestStart).join(':') + '::' + groups.slice(bestStart + bestLen).join(':');
}

// Host names as a client may ask for them: letters, digits, '-', '_', '.'.
const DOMAIN_RE = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/;

/** Parses a header from the start of `buf`; `more` means wait for more bytes. */
export function parseVlessHeader(buf: Uint8Array): ParseResult {
  const n = buf.length;
  if (n < 1) return { kind: 'more' };
  if (buf[0] !== 0) return { kind: 'error', reason: 'bad_version' };
  if (n < 18) return { kind: 'more' };
  const id = formatUuid(buf.subarray(1, 17));
  const addonsLen = buf[17];
  let p = 18 + addonsLen;
  if (n < p + 1) return { kind: 'more' };
  const cmd = buf[p++];
  if (cmd === 3) return { kind: 'ok', header: { id, command: 'mux', port: 0, address: '', addressType: 'domain' }, length: p };
  if (cmd !== 1 && cmd !== 2) return { kind: 'error', reason: 'bad_command' };
  if (n < p + 3) return { kind: 'more' };
  const port = (buf[p] << 8) | buf[p + 1];
  p += 2;
  if (port === 0) return { kind: 'error', reason: 'bad_port' };
  const atyp = buf[p++];
  let address: string;
  let addressType: VlessHeader['addressType'];
  if (atyp === 1) {
    if (n < p + 4) return { kind: 'more' };
    address = `${buf[p]}.${buf[p + 1]}.${buf[p + 2]}.${buf[p + 3]}`;
    addressType = 'ipv4';
    p += 4;
  } else if (atyp === 2) {
    if (n < p + 1) return { kind: 'more' };
    const len = buf[p++];
    if (len === 0) return { kind: 'error', reason: 'bad_domain' };
    if (n < p + len) return { kind: 'more' };
    address = Buffer.from(buf.buffer, buf.byteOffset + p, len).toString('latin1');
    if (!DOMAIN_RE.test(address) || address.includes('..')) return { kind: 'error', reason: 'bad_domain' };
    addressType = 'domain';
    p += len;
  } else if (atyp === 3) {
    if (n < p + 16) return { kind: 'more' };
    address = formatIpv6(buf, p);
    addressType = 'ipv6';
    p += 16;
  } else {
    return { kind: 'error', reason: 'bad_address_type' };
  }
  return { kind: 'ok', header: { id, command: cmd === 1 ? 'tcp' : 'udp', port, address, addressType }, length: p };
}

/** Builds a request header (tests, benchmark, and any client we write ourselves). */
export function buildVlessHeader(h: { id: string; command: VlessCommand; port?: number; address?: string; addons?: Uint8Array }): Buffer {
  const id = parseUuid(h.id);
  if (!id) throw new Error('bad uuid');
  const addons = h.addons ?? new Uint8Array(0);
  const parts: Buffer[] = [Buffer.from([0]), id, Buffer.from([addons.length]), Buffer.from(addons)];
  const cmd = h.command === 'tcp' ? 1 : h.command === 'udp' ? 2 : 3;
  parts.push(Buffer.from([cmd]));
  if (cmd !== 3) {
    const port = Buffer.alloc(2);
    port.writeUInt16BE(h.port ?? 0);
    parts.push(port);
    const a = h.address ?? '';
    const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
    if (v4) parts.push(Buffer.from([1, +v4[1], +v4[2], +v4[3], +v4[4]]));
    else if (a.includes(':')) parts.push(Buffer.from([3]), ipv6Bytes(a));
    else parts.push(Buffer.from([2, a.length]), Buffer.from(a, 'latin1'));
  }
  return Buffer.concat(parts);
}

function ipv6Bytes(a: string): Buffer {
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g || '0', 16), i * 2));
  return out;
}
