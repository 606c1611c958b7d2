// Egress policy: 'public-only' refuses destinations in private, loopback, link-local, CGNAT,
// multicast and reserved ranges. The name is resolved first and the resolved address is checked
// and then dialled, so a DNS answer cannot smuggle a private address past the check.
import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64],
] as const) blocked.addSubnet(net, bits, 'ipv6');

function embeddedV4(ip: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return m[1];
  // ::ffff:7f00:1 style (hex-written mapped address)
  const h = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (h) {
    const a = parseInt(h[1], 16), b = parseInt(h[2], 16);
    return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
  }
  return undefined;
}

/** True when `ip` (a literal address) is not a public unicast address. */
export function isNonPublicAddress(ip: string): boolean {
  const fam = isIP(ip);
  if (fam === 4) return blocked.check(ip, 'ipv4');
  if (fam === 6) {
    const v4 = embeddedV4(ip);
    if (v4) return blocked.check(v4, 'ipv4');
    return blocked.check(ip, 'ipv6');
  }
  return true; // not an address at all
}

export type EgressPolicy = 'allow-all' | 'public-only' | 'lan';

export class EgressRefused extends Error {
  code = 'EGRESS_REFUSED';
}

/** Resolves `host` to the address to dial, applying the policy. */
export async function resolveDestination(host: string, policy: EgressPolicy): Promise<{ address: string; family: 4 | 6 }> {
  let address = host;
  let family = isIP(host);
  if (family === 0) {
    const r = await lookup(host, { verbatim: true });
    address = r.address;
    family = r.family;
  }
  if (policy === 'public-only' && isNonPublicAddress(address)) throw new EgressRefused(`destination not allowed: ${address}`);
  return { address, family: family === 6 ? 6 : 4 };
}
