// Builds a session's VLESS `configuration` and its standard share link.
import type { Configuration } from './contract/schemas.ts';

export interface LinkSettings {
  publicHost: string;
  network: 'ws' | 'tcp';
  wsPort: number;
  tcpPort: number | null;
  wsPath: string;
  tls: boolean;
  sni?: string;
}

export function buildConfiguration(id: string, s: LinkSettings): Configuration {
  const network = s.network === 'tcp' && s.tcpPort ? 'tcp' : 'ws';
  const c: Configuration = {
    protocol: 'vless',
    address: s.publicHost,
    port: network === 'tcp' ? (s.tcpPort as number) : s.wsPort,
    id,
    encryption: 'none',
    network,
    security: s.tls ? 'tls' : 'none',
  };
  if (network === 'ws') c.path = s.wsPath;
  if (s.tls) c.sni = s.sni ?? s.publicHost;
  return c;
}

/** `vless://id@host:port?encryption=none&security=none&type=ws&path=%2Fvless#remark`, every part percent-encoded. */
export function buildLink(c: Configuration, remark: string): string {
  const host = c.address.includes(':') && !c.address.startsWith('[') ? `[${c.address}]` : c.address;
  const params: [string, string][] = [
    ['encryption', c.encryption],
    ['security', c.security],
    ['type', c.network],
  ];
  if (c.path !== undefined) params.push(['path', c.path]);
  if (c.sni !== undefined) params.push(['sni', c.sni]);
  const query = params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  return `vless://${encodeURIComponent(c.id)}@${host}:${c.port}?${query}#${encodeURIComponent(remark)}`;
}
