// The public host (does it name this machine?), the egress policy (does it let sessions reach
// the internet? judged by the policy code, no packet sent) and the clock (against a server's
// HTTP Date when there is one, else PostgreSQL's clock in cluster mode; never against the internet).
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { NetworkInterfaceInfo } from 'node:os';
import { allowedBy, type EgressPolicy } from '../dataplane/egress.ts';
import { CLOCK_SKEW_WARN_MS } from '../time.ts';
import { type Check, fail, messageOf, pass, warn, within } from './report.ts';

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** The addresses of this machine: every interface's, and (for loopback) its whole subnet. */
function localAddresses(interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): { has(ip: string): boolean } {
  const exact = new Set<string>();
  const loopback = new BlockList();
  for (const list of Object.values(interfaces)) {
    for (const a of list ?? []) {
      exact.add(a.address.split('%')[0].toLowerCase());
      if (a.internal && a.cidr) {
        const [net, bits] = a.cidr.split('/');
        loopback.addSubnet(net, Number(bits), a.family === 'IPv4' ? 'ipv4' : 'ipv6');
      }
    }
  }
  return { has: (ip) => exact.has(ip.toLowerCase()) || loopback.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4') };
}

/** The public host resolves (2 s) to an address of this machine; loopback counts for a loopback host. */
export async function publicHostCheck(publicHost: string, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): Promise<Check> {
  const id = 'public-host';
  const title = `Public host ${publicHost}`;
  const host = bare(publicHost);
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await within(lookup(host, { all: true }), `resolving ${host}`)).map((a) => a.address);
  } catch (err) {
    return fail(id, title, `does not resolve: ${messageOf(err)}`, `publish a DNS record for ${host} pointing at this machine, or set --public-host to its address`);
  }
  const local = localAddresses(interfaces);
  const mine = addresses.filter((a) => local.has(a));
  if (mine.length) return pass(id, title, `${isIP(host) ? 'is' : 'resolves to'} ${mine.join(', ')}, an address of this machine`);
  return warn(id, title, `resolves to ${addresses.join(', ')}, no address of this machine`,
    `fine behind NAT, a port forward or a load balancer that sends ${host} here; otherwise point its DNS record at this machine or set --public-host`);
}

/** A public test destination, judged by the configured egress policy (nothing is sent). */
export function egressCheck(policy: EgressPolicy, target = { address: '1.1.1.1', port: 443 }): Check {
  const title = `Egress (${policy})`;
  const to = `${target.address}:${target.port}`;
  if (allowedBy(policy, target.address)) return pass('egress', title, `sessions may reach a public address such as ${to}`);
  return fail('egress', title, `the policy refuses ${to}: sessions reach nothing on the internet`, 'use --egress public-only (the default), lan or allow-all');
}

/** Another machine's clock, read between sentAt and receivedAt (this machine's ms). */
export interface OtherClock {
  /** Its time (an HTTP Date, or an ISO time with milliseconds), null when it sent none. */
  date: string | null;
  sentAt: number;
  receivedAt: number;
  from: string;
  /** How finely `date` tells the time: 1000 for an HTTP Date (the default), 1 for PostgreSQL's clock_timestamp(). */
  resolutionMs?: number;
}

/** The skew between this machine and another's clock (a server's HTTP Date, PostgreSQL's): warn over 5 s. */
export function clockCheck(server: OtherClock | null): Check {
  const title = 'Clock';
  if (!server) {
    return warn('clock', title, 'could not be checked: no server to compare with (the doctor never reaches the internet)',
      'run doctor with --url of a running server, or check NTP with `timedatectl`');
  }
  const date = server.date ? Date.parse(server.date) : NaN;
  if (Number.isNaN(date)) return warn('clock', title, `could not be checked: ${server.from} sent no Date header`, 'check NTP with `timedatectl`');
  const local = (server.sentAt + server.receivedAt) / 2;
  // An HTTP Date drops the milliseconds: up to a second of skew is its rounding.
  const skew = Math.max(0, Math.abs(date - local) - (server.resolutionMs ?? 1_000) - (server.receivedAt - server.sentAt) / 2);
  const secs = Math.round(skew / 100) / 10;
  if (skew > CLOCK_SKEW_WARN_MS) {
    return warn('clock', title, `this machine and ${server.from} differ by about ${secs} s`,
      'run NTP on both machines (timedatectl set-ntp true): expiry, periods and certificates are judged by the clock');
  }
  return pass('clock', title, `within ${CLOCK_SKEW_WARN_MS / 1000} s of ${server.from} (about ${secs} s apart)`);
}
