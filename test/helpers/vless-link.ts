// Parses a `vless://` share link back into the `configuration` shape the v2ray helpers take
// (test/dataplane/helpers/v2ray.ts: vlessOutbound / startV2rayClient), as a client importing it
// would: every part percent-decoded, IPv6 brackets removed.
import type { VlessConfiguration } from '../dataplane/helpers/v2ray.ts';

export interface ParsedLink extends VlessConfiguration {
  remark: string;
  params: Record<string, string>;
}

export function parseVlessLink(link: string): ParsedLink {
  const u = new URL(link);
  if (u.protocol !== 'vless:') throw new Error(`not a vless link: ${link}`);
  const params = Object.fromEntries(u.searchParams);
  const network = params.type ?? 'tcp';
  if (network !== 'ws' && network !== 'tcp') throw new Error(`unsupported type=${network}`);
  const security = params.security ?? 'none';
  if (security !== 'none' && security !== 'tls') throw new Error(`unsupported security=${security}`);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return {
    protocol: 'vless',
    id: decodeURIComponent(u.username),
    address: host,
    port: Number(u.port),
    encryption: params.encryption ?? 'none',
    network,
    path: network === 'ws' ? (params.path ?? '/') : undefined,
    security,
    sni: params.sni,
    remark: decodeURIComponent(u.hash.slice(1)),
    params,
  };
}
