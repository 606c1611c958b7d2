// The four subscription formats a client can read, built from the sessions' `configuration`
// and share link (both made by server/links.ts, so whatever links carry, TLS included, flows
// here), and the User-Agent table that picks a format when ?format= is absent.
import type { Configuration } from '../contract/schemas.ts';
import type { SubscriptionFormat } from '../contract/subscriptions.ts';

/** One usable session as a subscription entry. `name` is unique within the subscription. */
export interface SubscriptionEntry {
  name: string;
  configuration: Configuration;
  link: string;
  /**
   * The server's certificate (PEM) when the configuration pins a self-signed one (`pcs`):
   * sing-box trusts such a server only by its PEM, not by the certificate's SHA-256.
   */
  certificatePem?: string;
}

export interface RenderedSubscription {
  body: string;
  contentType: string;
  extension: string;
}

/**
 * TLS fields of the share-link standard that a configuration may carry besides `sni`
 * (fingerprint, ALPN, pinned certificate SHA-256, name to verify). Read when present.
 */
type TlsExtras = { fp?: string; alpn?: string | string[]; pcs?: string; vcn?: string };
const tlsOf = (c: Configuration): TlsExtras => c as Configuration & TlsExtras;
const alpnList = (a: string | string[] | undefined): string[] | undefined =>
  a === undefined ? undefined : (Array.isArray(a) ? a : a.split(',')).map((s) => s.trim()).filter(Boolean);

/** Ports of the local proxies in the JSON and YAML configs, the usual ones of each client family. */
export const LOCAL_PORTS = { xraySocks: 10808, xrayHttp: 10809, singBoxMixed: 2080, clashMixed: 7890 } as const;

// User-Agent table. Order matters: the first match wins. Unknown clients get base64, the one
// format every client reads.
// - v2rayN / v2rayNG take base64 share links as their subscription format (one server per link,
//   each with its own TLS parameters); their JSON import is a single custom profile, so links fit.
// - Xray (and tools that announce it) take the full Xray JSON config.
// - sing-box family: the official apps (SFA/SFI/SFM/SFT announce "sing-box"), Hiddify, NekoBox
//   (which also says "Prefer ClashMeta Format", hence before the Clash rule), Karing.
// - Clash family: Clash Meta / Mihomo and apps built on it (Clash Verge, FlClash, Stash, Clash
//   for Android): all get Mihomo YAML, which has the vless proxy type.
export const USER_AGENT_TABLE: { pattern: RegExp; format: SubscriptionFormat; clients: string }[] = [
  { pattern: /^v2rayN(G)?\//i, format: 'base64', clients: 'v2rayN, v2rayNG' },
  { pattern: /^xray([\s/-]|core|$)/i, format: 'xray', clients: 'Xray' },
  { pattern: /^(sing-box|SF[AIMT]\/)|sing-box/i, format: 'sing-box', clients: 'sing-box (SFA, SFI, SFM, SFT)' },
  { pattern: /^(hiddify|nekobox|nekoray|karing)/i, format: 'sing-box', clients: 'Hiddify, NekoBox, Karing' },
  { pattern: /^(clash|mihomo|stash|flclash)|clash[-. ]?(verge|meta)/i, format: 'clash', clients: 'Clash, Mihomo, Clash Verge, Stash, FlClash' },
];

/** Whether the User-Agent is one of the apps of the table (not a browser or an unknown client). */
export function isKnownClient(userAgent: string | undefined): boolean {
  const ua = (userAgent ?? '').trim();
  return USER_AGENT_TABLE.some((row) => row.pattern.test(ua));
}

export function formatForUserAgent(userAgent: string | undefined): SubscriptionFormat {
  const ua = (userAgent ?? '').trim();
  for (const row of USER_AGENT_TABLE) if (row.pattern.test(ua)) return row.format;
  return 'base64';
}

/** Async only for Clash: the YAML writer loads on first use (it is a start-up cost few servers need). */
export async function render(format: SubscriptionFormat, entries: SubscriptionEntry[], title: string): Promise<RenderedSubscription> {
  switch (format) {
    case 'base64':
      return { body: base64Links(entries), contentType: 'text/plain; charset=utf-8', extension: 'txt' };
    case 'xray':
      return { body: JSON.stringify(xrayConfig(entries, title), null, 2), contentType: 'application/json; charset=utf-8', extension: 'json' };
    case 'sing-box':
      return { body: JSON.stringify(singBoxConfig(entries), null, 2), contentType: 'application/json; charset=utf-8', extension: 'json' };
    case 'clash':
      // `default` (module.exports of yaml's CommonJS build): the server bundle's chunk has no named exports.
      return { body: (await import('yaml')).default.stringify(clashConfig(entries)), contentType: 'text/yaml; charset=utf-8', extension: 'yaml' };
  }
}

/** The share links, one a line, base64 (standard alphabet, padded) as v2rayN-style clients read them. */
export function base64Links(entries: SubscriptionEntry[]): string {
  const text = entries.map((e) => e.link).join('\n');
  return Buffer.from(text, 'utf8').toString('base64');
}

function xrayOutbound(c: Configuration, tag: string): Record<string, unknown> {
  const stream: Record<string, unknown> = { network: c.network, security: c.security };
  if (c.network === 'ws') stream.wsSettings = { path: c.path ?? '/' };
  if (c.security === 'tls') {
    const t = tlsOf(c);
    const tls: Record<string, unknown> = { serverName: c.sni ?? c.address };
    if (t.fp) tls.fingerprint = t.fp;
    const alpn = alpnList(t.alpn);
    if (alpn?.length) tls.alpn = alpn;
    if (t.pcs) tls.pinnedPeerCertSha256 = t.pcs;
    if (t.vcn) tls.verifyPeerCertByName = t.vcn;
    stream.tlsSettings = tls;
  }
  return {
    tag,
    protocol: 'vless',
    settings: { vnext: [{ address: c.address, port: c.port, users: [{ id: c.id, encryption: c.encryption, level: 0 }] }] },
    streamSettings: stream,
  };
}

/**
 * A whole Xray client config: SOCKS and HTTP inbounds on loopback, one VLESS outbound per
 * session, and routing through a balancer over them. Only fields that v2ray 4.x also knows,
 * so Xray, v2rayN's custom profiles and v2ray 4.34 run it as it is. With no usable session
 * every connection goes to a blackhole: nothing leaks out directly.
 */
export function xrayConfig(entries: SubscriptionEntry[], title: string): Record<string, unknown> {
  const proxies = entries.map((e, i) => xrayOutbound(e.configuration, `proxy-${i + 1}`));
  const rule = proxies.length
    ? { type: 'field', network: 'tcp,udp', balancerTag: 'sessions' }
    : { type: 'field', network: 'tcp,udp', outboundTag: 'block' };
  return {
    remarks: title,
    log: { loglevel: 'warning' },
    inbounds: [
      { tag: 'socks-in', listen: '127.0.0.1', port: LOCAL_PORTS.xraySocks, protocol: 'socks', settings: { auth: 'noauth', udp: true, ip: '127.0.0.1' } },
      { tag: 'http-in', listen: '127.0.0.1', port: LOCAL_PORTS.xrayHttp, protocol: 'http', settings: {} },
    ],
    outbounds: [...proxies, { tag: 'block', protocol: 'blackhole', settings: {} }],
    routing: {
      domainStrategy: 'AsIs',
      ...(proxies.length ? { balancers: [{ tag: 'sessions', selector: ['proxy-'] }] } : {}),
      rules: [rule],
    },
  };
}

function singBoxOutbound(e: SubscriptionEntry): Record<string, unknown> {
  const c = e.configuration;
  const out: Record<string, unknown> = { type: 'vless', tag: e.name, server: c.address, server_port: c.port, uuid: c.id, packet_encoding: 'xudp' };
  if (c.security === 'tls') {
    const t = tlsOf(c);
    const tls: Record<string, unknown> = { enabled: true, server_name: c.sni ?? c.address };
    const alpn = alpnList(t.alpn);
    if (alpn?.length) tls.alpn = alpn;
    if (t.fp) tls.utls = { enabled: true, fingerprint: t.fp };
    // sing-box pins by PEM (`certificate`, a line array) or by public-key hash, not by the
    // certificate SHA-256 of `pcs`: a self-signed server is trusted through its PEM.
    if (t.pcs && e.certificatePem) tls.certificate = e.certificatePem.trim().split(/\r?\n/);
    out.tls = tls;
  }
  if (c.network === 'ws') out.transport = { type: 'ws', path: c.path ?? '/' };
  return out;
}

/**
 * A sing-box config (1.11+). Two inbounds: `tun` for phones (the official apps capture traffic
 * only through a VPN interface; auto_route with strict_route keeps it from leaking around the
 * tunnel) and `mixed` (SOCKS + HTTP) on loopback for desktops. One vless outbound per session and
 * a selector over them that the route ends in; the route sniffs destinations and answers DNS
 * itself for the tun. With no usable session, connections are rejected by a route rule (the
 * action form; the `block` outbound is gone from sing-box).
 */
export function singBoxConfig(entries: SubscriptionEntry[]): Record<string, unknown> {
  const inbounds = [
    { type: 'tun', tag: 'tun-in', address: ['172.19.0.1/30', 'fdfe:dcba:9876::1/126'], auto_route: true, strict_route: true, stack: 'mixed' },
    { type: 'mixed', tag: 'mixed-in', listen: '127.0.0.1', listen_port: LOCAL_PORTS.singBoxMixed },
  ];
  const common = [{ action: 'sniff' }, { protocol: 'dns', action: 'hijack-dns' }];
  if (!entries.length) {
    return {
      log: { level: 'warn' },
      inbounds,
      outbounds: [{ type: 'direct', tag: 'direct' }],
      route: { auto_detect_interface: true, rules: [{ inbound: ['tun-in', 'mixed-in'], action: 'reject' }], final: 'direct' },
    };
  }
  return {
    log: { level: 'warn' },
    inbounds,
    outbounds: [
      { type: 'selector', tag: 'proxy', outbounds: entries.map((e) => e.name), default: entries[0].name },
      ...entries.map(singBoxOutbound),
      { type: 'direct', tag: 'direct' },
    ],
    route: { auto_detect_interface: true, rules: common, final: 'proxy' },
  };
}

function clashProxy(e: SubscriptionEntry): Record<string, unknown> {
  const c = e.configuration;
  const p: Record<string, unknown> = {
    name: e.name,
    type: 'vless',
    server: c.address,
    port: c.port,
    uuid: c.id,
    udp: true,
    'packet-encoding': 'xudp',
    tls: c.security === 'tls',
    network: c.network,
  };
  if (c.security === 'tls') {
    const t = tlsOf(c);
    p.servername = c.sni ?? c.address;
    const alpn = alpnList(t.alpn);
    if (alpn?.length) p.alpn = alpn;
    if (t.pcs) p.fingerprint = t.pcs; // Mihomo's `fingerprint` pins the certificate's SHA-256
    if (t.fp) p['client-fingerprint'] = t.fp;
  }
  if (c.network === 'ws') p['ws-opts'] = { path: c.path ?? '/' };
  return p;
}

/**
 * A Clash Meta (Mihomo) config: a mixed port on loopback, the sessions as `vless` proxies, one
 * `select` group, and a rule sending everything to it (or rejecting all with no session).
 */
export function clashConfig(entries: SubscriptionEntry[]): Record<string, unknown> {
  const base = { 'mixed-port': LOCAL_PORTS.clashMixed, 'allow-lan': false, mode: 'rule', 'log-level': 'warning' };
  if (!entries.length) return { ...base, proxies: [], 'proxy-groups': [], rules: ['MATCH,REJECT'] };
  return {
    ...base,
    proxies: entries.map(clashProxy),
    'proxy-groups': [{ name: 'VPN Access Desk', type: 'select', proxies: entries.map((e) => e.name) }],
    rules: ['MATCH,VPN Access Desk'],
  };
}
