// "Let other devices connect": which addresses of this machine can be offered, and which one
// to preselect. Pure functions over os.networkInterfaces()'s shape, so unit tests can feed them
// any machine's interfaces.
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { BlockList, isIP } from 'node:net';
import type { LanAddress } from '../common/api-types.ts';

const privateV4 = new BlockList();
for (const [net, prefix] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]] as const) privateV4.addSubnet(net, prefix, 'ipv4');

export type Interfaces = NodeJS.Dict<NetworkInterfaceInfo[]>;

/** True for an RFC 1918 IPv4 address: the kind a home or office network hands out. */
export function isPrivateV4(address: string): boolean {
  return isIP(address) === 4 && privateV4.check(address, 'ipv4');
}

/**
 * The non-internal IPv4 and IPv6 addresses, in interface order. IPv6 link-local addresses
 * (fe80::/10) are left out: a link needs a zone id to use them, which phones cannot type.
 */
export function listAddresses(ifaces: Interfaces = networkInterfaces()): LanAddress[] {
  const out: LanAddress[] = [];
  const seen = new Set<string>();
  for (const [name, infos] of Object.entries(ifaces)) {
    for (const info of infos ?? []) {
      if (info.internal) continue;
      const family = info.family === 'IPv4' || (info.family as unknown) === 4 ? 4 : 6;
      const address = info.address.split('%')[0];
      if (family === 6 && /^fe[89ab]/i.test(address)) continue;
      if (seen.has(address) || isIP(address) !== family) continue;
      seen.add(address);
      out.push({ address, family, interface: name, lan: family === 4 && isPrivateV4(address) });
    }
  }
  return out;
}

/** Bridges of containers and virtual machines: private addresses that no phone can reach. */
const VIRTUAL = /^(docker|br-|veth|virbr|vmnet|vboxnet|lxc|lxd|cni|flannel|podman|vEthernet)/i;

/**
 * The address to preselect: the first private IPv4 of a real interface, else the first private
 * IPv4, else the first IPv4, else the first address.
 */
export function pickLanAddress(list: readonly LanAddress[]): string | null {
  const pick = list.find((a) => a.lan && !VIRTUAL.test(a.interface)) ?? list.find((a) => a.lan) ?? list.find((a) => a.family === 4) ?? list[0];
  return pick?.address ?? null;
}
