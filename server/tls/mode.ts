// Which TLS mode is in force and why. `auto` turns TLS on whenever the public host is one that
// clients reach over the internet: current Xray refuses plain VLESS to such an address, and still
// accepts it to loopback, private and link-local addresses (and names that only exist locally).
import { BlockList, isIP } from 'node:net';

export type TlsMode = 'auto' | 'on' | 'off';
export const TLS_MODES: readonly TlsMode[] = ['auto', 'on', 'off'];

const local = new BlockList();
// IPv4: unspecified, "this network", private (RFC 1918), shared CGNAT space, loopback, link-local.
for (const [net, prefix] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16]] as const) {
  local.addSubnet(net, prefix, 'ipv4');
}
// IPv6: unspecified, loopback, unique local (fc00::/7), link-local (fe80::/10).
local.addAddress('::', 'ipv6');
local.addAddress('::1', 'ipv6');
local.addSubnet('fc00::', 7, 'ipv6');
local.addSubnet('fe80::', 10, 'ipv6');

/** Names that no public resolver answers: localhost, mDNS and the reserved home/internal suffixes. */
const LOCAL_SUFFIXES = ['localhost', 'local', 'lan', 'home.arpa', 'internal'];

function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** True for loopback, private and link-local addresses and locally-scoped names. */
export function isLocalHost(host: string): boolean {
  const h = bare(host.trim()).toLowerCase().replace(/\.$/, '');
  const family = isIP(h.split('%')[0]);
  if (family === 4) return local.check(h, 'ipv4');
  if (family === 6) {
    const addr = h.split('%')[0];
    // An IPv4-mapped IPv6 address is judged by its IPv4 part.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(addr);
    return mapped ? local.check(mapped[1], 'ipv4') : local.check(addr, 'ipv6');
  }
  if (!h.includes('.')) return true; // a single-label name only resolves on a local network
  return LOCAL_SUFFIXES.some((s) => h === s || h.endsWith(`.${s}`));
}

export interface TlsDecision {
  enabled: boolean;
  reason: string;
}

/** The decision for a mode and public host; `forced` is set when certificate files were given. */
export function decideTls(mode: TlsMode, publicHost: string, forced = false): TlsDecision {
  if (mode === 'off') return { enabled: false, reason: 'TLS is off (--tls off).' };
  if (mode === 'on') return { enabled: true, reason: 'TLS is on (--tls on).' };
  if (forced) return { enabled: true, reason: 'auto: a certificate was given, so TLS is on.' };
  return isLocalHost(publicHost)
    ? { enabled: false, reason: `auto: the public host ${publicHost} is loopback, private or link-local, where plain VLESS is accepted.` }
    : { enabled: true, reason: `auto: the public host ${publicHost} is public, and current clients refuse VLESS without TLS to it.` };
}

export function parseTlsMode(value: string | undefined): TlsMode | undefined {
  if (value === undefined || value === '') return undefined;
  return (TLS_MODES as readonly string[]).includes(value) ? (value as TlsMode) : undefined;
}
