// Builds a session's VLESS `configuration` and its standard share link (the share-link standard
// of XTLS/Xray-core discussion 716). The configuration mirrors the link field for field, so every
// other format (subscriptions) can be derived from the configuration alone.
import type { Configuration } from './contract/schemas.ts';

export interface LinkSettings {
  publicHost: string;
  network: 'ws' | 'tcp';
  wsPort: number;
  tcpPort: number | null;
  wsPath: string;
  tls: boolean;
  sni?: string;
  /** TLS client fingerprint clients should imitate (`fp`), e.g. `chrome`. */
  fp?: string;
  /** ALPN protocols offered, in order (`alpn`, written comma-separated). */
  alpn?: string[];
  /** SHA-256 of the certificate (hex, no colons) when it is self-signed: clients pin it (`pcs`). */
  pcs?: string;
  /** Name to verify the certificate by, when it differs from the sni (`vcn`). */
  vcn?: string;
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
  if (s.tls) {
    c.sni = s.sni ?? s.publicHost;
    if (s.fp) c.fp = s.fp;
    if (s.alpn?.length) c.alpn = s.alpn.join(',');
    if (s.pcs) c.pcs = s.pcs;
    if (s.vcn && s.vcn !== c.sni) c.vcn = s.vcn;
  }
  return c;
}

/**
 * `vless://id@host:port?encryption=none&security=none&type=ws&path=%2Fvless#remark`, every part
 * percent-encoded (encodeURIComponent: `h2,http/1.1` is written `h2%2Chttp%2F1.1`). With TLS:
 * `security=tls&sni=..&fp=..&alpn=..&pcs=..&vcn=..`, each only when the configuration has it.
 */
export function buildLink(c: Configuration, remark: string): string {
  const host = c.address.includes(':') && !c.address.startsWith('[') ? `[${c.address}]` : c.address;
  const params: [string, string][] = [
    ['encryption', c.encryption],
    ['security', c.security],
    ['type', c.network],
  ];
  if (c.path !== undefined) params.push(['path', c.path]);
  for (const key of ['sni', 'fp', 'alpn', 'pcs', 'vcn'] as const) {
    const v = c[key];
    if (v !== undefined) params.push([key, v]);
  }
  const query = params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  return `vless://${encodeURIComponent(c.id)}@${host}:${c.port}?${query}#${encodeURIComponent(remark)}`;
}
