// Egress policy: which destinations a session holder may reach through the proxy and VLESS
// (TCP and UDP). The name is resolved first and the resolved address is checked and then
// dialled, so a DNS answer cannot smuggle a private address past the check (no rebinding
// between check and connect).
//
// Every address falls in one of three classes:
//   public     global unicast: IPv4 outside the special-purpose ranges, IPv6 inside 2000::/3
//              outside its special-purpose blocks
//   private    RFC 1918 IPv4 (10/8, 172.16/12, 192.168/16) and IPv6 unique-local fc00::/7
//   forbidden  everything else: loopback, link-local (169.254/16 with cloud metadata,
//              fe80::/10), unspecified, multicast, broadcast, CGNAT, documentation, benchmarking,
//              reserved, site-local, local-use NAT64 (64:ff9b:1::/48), the IETF protocol block
//              2001::/23 (Teredo 2001::/32 among them), and any IPv6 form outside 2000::/3
// IPv6 addresses that carry an IPv4 address (mapped ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d,
// NAT64 64:ff9b::/96, 6to4 2002::/16) take the class of the IPv4 address they carry, so no
// encoding of a forbidden IPv4 address gets through. The deprecated compatible form ::a.b.c.d
// (so ::7f00:1, and :: and ::1) is forbidden whatever it carries.
//
// Policies: 'public-only' (the default) allows public; 'lan' allows public and private (for
// sharing a desktop's network; never loopback or link-local); 'allow-all' is an explicit
// opt-in that allows everything (tests that relay to loopback targets use it).
import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

export type EgressPolicy = 'public-only' | 'lan' | 'allow-all';
export const EGRESS_POLICIES: readonly EgressPolicy[] = ['public-only', 'lan', 'allow-all'];
export const DEFAULT_EGRESS: EgressPolicy = 'public-only';

export type AddressClass = 'public' | 'private' | 'forbidden';

function list(ranges: readonly (readonly [string, number])[], type: 'ipv4' | 'ipv6'): BlockList {
  const b = new BlockList();
  for (const [net, bits] of ranges) b.addSubnet(net, bits, type);
  return b;
}

const V4_PRIVATE = list([['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]], 'ipv4');
const V4_FORBIDDEN = list([
  ['0.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['192.0.0.0', 24], ['192.0.2.0', 24],
  ['192.88.99.0', 24], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
], 'ipv4');
const V6_GLOBAL = list([['2000::', 3]], 'ipv6');
const V6_PRIVATE = list([['fc00::', 7]], 'ipv6');
/** Special-purpose blocks inside 2000::/3 that are not globally reachable. */
const V6_FORBIDDEN_IN_GLOBAL = list([['2001::', 23], ['2001:db8::', 32], ['3fff::', 20]], 'ipv6');

/** The 16 bytes of a valid IPv6 literal (zone id dropped), dotted-quad tail included. */
function v6Bytes(ip: string): Uint8Array {
  let s = ip.split('%')[0].toLowerCase();
  const out = new Uint8Array(16);
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const q = dotted[1].split('.').map(Number);
    s = `${s.slice(0, -dotted[1].length)}${((q[0] << 8) | q[1]).toString(16)}:${((q[2] << 8) | q[3]).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 255;
  });
  return out;
}

const v4At = (b: Uint8Array, i: number) => `${b[i]}.${b[i + 1]}.${b[i + 2]}.${b[i + 3]}`;
const zero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

/** The IPv4 address an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4), if any. */
export function embeddedV4(ip: string): string | undefined {
  const b = v6Bytes(ip);
  if (zero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return v4At(b, 12); // ::ffff:a.b.c.d
  if (zero(b, 0, 12)) return v4At(b, 12); // ::a.b.c.d (deprecated compatible form; :: and ::1 too)
  if (zero(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zero(b, 10, 12)) return v4At(b, 12); // ::ffff:0:a.b.c.d
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(b, 4, 12)) return v4At(b, 12); // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return v4At(b, 2); // 2002:AABB:CCDD::/48 (6to4)
  return undefined;
}

const isCompatible = (ip: string) => {
  const b = v6Bytes(ip);
  return zero(b, 0, 12);
};

function classifyV4(ip: string): AddressClass {
  if (V4_FORBIDDEN.check(ip, 'ipv4')) return 'forbidden';
  if (V4_PRIVATE.check(ip, 'ipv4')) return 'private';
  return 'public';
}

/** The class of a literal address; anything that is not an address is forbidden. */
export function classifyAddress(ip: string): AddressClass {
  const fam = isIP(ip);
  if (fam === 4) return classifyV4(ip);
  if (fam !== 6) return 'forbidden';
  if (isCompatible(ip)) return 'forbidden';
  const v4 = embeddedV4(ip);
  if (v4) return classifyV4(v4);
  const plain = ip.split('%')[0];
  if (V6_PRIVATE.check(plain, 'ipv6')) return 'private';
  if (!V6_GLOBAL.check(plain, 'ipv6') || V6_FORBIDDEN_IN_GLOBAL.check(plain, 'ipv6')) return 'forbidden';
  return 'public';
}

/** True when `ip` (a literal address) is not a public unicast address. */
export function isNonPublicAddress(ip: string): boolean {
  return classifyAddress(ip) !== 'public';
}

/** Whether the policy lets a connection go to the literal address `ip`. */
export function allowedBy(policy: EgressPolicy, ip: string): boolean {
  if (policy === 'allow-all') return isIP(ip) !== 0;
  const c = classifyAddress(ip);
  return c === 'public' || (policy === 'lan' && c === 'private');
}

export function isEgressPolicy(v: unknown): v is EgressPolicy {
  return typeof v === 'string' && (EGRESS_POLICIES as readonly string[]).includes(v);
}

export class EgressRefused extends Error {
  code = 'EGRESS_REFUSED';
}

/** Resolves `host` to the address to dial, applying the policy; the caller dials that address. */
export async function resolveDestination(host: string, policy: EgressPolicy): Promise<{ address: string; family: 4 | 6 }> {
  let address = host;
  let family = isIP(host);
  if (family === 0) {
    const r = await lookup(host, { verbatim: true });
    address = r.address;
    family = r.family;
  }
  if (!allowedBy(policy, address)) throw new EgressRefused(`destination not allowed: ${address}`);
  return { address, family: family === 6 ? 6 : 4 };
}
