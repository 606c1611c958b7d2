// Which host links name when the server binds every interface, and how far a server without
// TLS is reachable. `--host 0.0.0.0` (or `::`) listens everywhere, but 0.0.0.0 in a link means
// nothing to a client: the first non-internal interface address is used instead (the CLI's
// `--public-host` overrides it, and with no such address the CLI asks for it).
import type { NetworkInterfaceInfo } from 'node:os';
import { isLocalHost } from './tls/mode.ts';

type Interfaces = NodeJS.Dict<NetworkInterfaceInfo[]>;

export function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]' || host === '';
}

function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.startsWith('127.') || h === '::1';
}

const linkLocal = (a: NetworkInterfaceInfo) => (a.family === 'IPv4' ? a.address.startsWith('169.254.') : /^fe[89ab]/i.test(a.address));

/** The addresses a wildcard bind answers on that other machines can use (no loopback, no link-local). */
function reachable(bindHost: string, interfaces: Interfaces): NetworkInterfaceInfo[] {
  const all = Object.values(interfaces).flatMap((list) => list ?? []).filter((a) => !a.internal && !linkLocal(a));
  // 0.0.0.0 listens on IPv4 only; :: on both (IPv4 first: every client reaches those).
  const v4 = all.filter((a) => a.family === 'IPv4');
  return bindHost === '0.0.0.0' ? v4 : [...v4, ...all.filter((a) => a.family === 'IPv6')];
}

/** The host written into links for this bind host; null when a wildcard bind finds no usable address. */
export function choosePublicHost(bindHost: string, interfaces: Interfaces): string | null {
  if (!isWildcardHost(bindHost)) return bindHost;
  return reachable(bindHost, interfaces)[0]?.address ?? null;
}

/**
 * How far clear text (no TLS) would travel: `loopback` (this machine only), `local` (private
 * and link-local networks) or `internet` (a public bind address, a wildcard bind over a public
 * interface, or links that name a public host, which clients reach over the internet).
 */
export function clearTextReach(bindHost: string, publicHost: string, interfaces: Interfaces): 'loopback' | 'local' | 'internet' {
  if (isLoopback(bindHost)) return 'loopback';
  const bound = isWildcardHost(bindHost) ? reachable(bindHost, interfaces).map((a) => a.address) : [bindHost];
  if (bound.some((a) => !isLocalHost(a)) || !isLocalHost(publicHost)) return 'internet';
  return 'local';
}
