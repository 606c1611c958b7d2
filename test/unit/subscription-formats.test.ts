// Subscription formats (server/subscriptions/formats.ts) checked by real parsers against the
// documented fields of each client: base64 through Buffer and the share-link parser, the Mihomo
// YAML through the `yaml` library against Mihomo's vless proxy fields, the sing-box JSON against
// sing-box's vless outbound, TLS, ws transport, selector and mixed inbound fields. Also the
// User-Agent table, the miss limiter, the secret and its key file, and log redaction.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import type { Configuration } from '../../server/contract/schemas.ts';
import { buildConfiguration, buildLink, type LinkSettings } from '../../server/links.ts';
import {
  base64Links,
  clashConfig,
  formatForUserAgent,
  render,
  singBoxConfig,
  xrayConfig,
  type SubscriptionEntry,
} from '../../server/subscriptions/formats.ts';
import { MissLimiter } from '../../server/subscriptions/miss-limiter.ts';
import { KEY_FILES } from '../../server/key-file.ts';
import { loadServerKey, SECRET_SHAPE, SubscriptionSecrets } from '../../server/subscriptions/secret.ts';
import { redactIds } from '../../server/time.ts';
import { parseVlessLink } from '../helpers/vless-link.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const IDS = ['3f1c2a9e-7b4d-4c1e-9a2f-0123456789ab', '9b2d7c1e-1111-4a2b-8c3d-abcdefabcdef'];
const plain: LinkSettings = { publicHost: '127.0.0.1', network: 'ws', wsPort: 8787, tcpPort: 8789, wsPath: '/vless', tls: false };

function entries(settings: LinkSettings, extra: Partial<Record<'fp' | 'alpn' | 'pcs' | 'vcn', string>> = {}): SubscriptionEntry[] {
  return IDS.map((id, i) => {
    const configuration = { ...buildConfiguration(id, i === 1 ? { ...settings, network: 'tcp' } : settings), ...extra } as Configuration;
    const name = `de-fra ${id.slice(0, 8)}`;
    return { name, configuration, link: buildLink(configuration, name) };
  });
}

// Mihomo's documented fields of a `vless` proxy: general fields, VLESS fields, TLS fields, transport options.
const MIHOMO_VLESS_FIELDS = new Set([
  'name', 'type', 'server', 'port', 'ip-version', 'udp', 'interface-name', 'routing-mark', 'tfo', 'mptcp', 'dialer-proxy', 'smux',
  'uuid', 'flow', 'packet-encoding', 'encryption', 'network',
  'tls', 'servername', 'alpn', 'fingerprint', 'client-fingerprint', 'skip-cert-verify', 'reality-opts', 'ech-opts', 'certificate', 'private-key',
  'ws-opts', 'grpc-opts', 'h2-opts', 'http-opts', 'xhttp-opts',
]);
const MIHOMO_WS_OPTS = new Set(['path', 'headers', 'max-early-data', 'early-data-header-name', 'v2ray-http-upgrade', 'v2ray-http-upgrade-fast-open']);
const MIHOMO_NETWORKS = new Set(['tcp', 'ws', 'http', 'h2', 'grpc', 'xhttp']);
const MIHOMO_GROUP_TYPES = new Set(['select', 'url-test', 'fallback', 'load-balance', 'relay']);

// sing-box's documented fields: vless outbound (+ dial fields), outbound TLS, V2Ray ws transport, selector, direct, mixed inbound.
const SB_DIAL = ['detour', 'bind_interface', 'inet4_bind_address', 'inet6_bind_address', 'routing_mark', 'reuse_addr', 'connect_timeout', 'tcp_fast_open', 'tcp_multi_path', 'udp_fragment', 'domain_strategy', 'fallback_delay', 'domain_resolver', 'network_strategy'];
const SB_VLESS = new Set(['type', 'tag', 'server', 'server_port', 'uuid', 'flow', 'network', 'tls', 'packet_encoding', 'multiplex', 'transport', ...SB_DIAL]);
const SB_TLS = new Set(['enabled', 'disable_sni', 'server_name', 'insecure', 'alpn', 'min_version', 'max_version', 'cipher_suites', 'curve_preferences', 'certificate', 'certificate_path', 'certificate_public_key_sha256', 'fragment', 'fragment_fallback_delay', 'record_fragment', 'ech', 'utls', 'reality']);
const SB_WS = new Set(['type', 'path', 'headers', 'max_early_data', 'early_data_header_name']);
const SB_SELECTOR = new Set(['type', 'tag', 'outbounds', 'default', 'interrupt_exist_connections']);
const SB_DIRECT = new Set(['type', 'tag', ...SB_DIAL]);
const SB_MIXED = new Set(['type', 'tag', 'listen', 'listen_port', 'users', 'set_system_proxy', 'tcp_fast_open', 'tcp_multi_path', 'udp_fragment', 'udp_timeout', 'detour']);
const SB_TUN = new Set(['type', 'tag', 'interface_name', 'address', 'mtu', 'auto_route', 'iproute2_table_index', 'iproute2_rule_index', 'auto_redirect', 'strict_route', 'route_address', 'route_exclude_address', 'endpoint_independent_nat', 'udp_timeout', 'stack', 'include_package', 'exclude_package', 'platform']);
const SB_ROUTE = new Set(['rules', 'rule_set', 'final', 'auto_detect_interface', 'override_android_vpn', 'default_interface', 'default_mark', 'default_domain_resolver', 'default_network_strategy']);
const SB_ACTIONS = new Set(['route', 'reject', 'hijack-dns', 'sniff', 'resolve', 'route-options']);

function assertSubset(keys: string[], allowed: Set<string>, what: string): void {
  const unknown = keys.filter((k) => !allowed.has(k));
  assert.deepEqual(unknown, [], `${what}: fields not in the documentation: ${unknown.join(', ')}`);
}

test('base64: decodes to one share link per session, each parsing back to its configuration', () => {
  const es = entries(plain);
  const text = Buffer.from(base64Links(es), 'base64').toString('utf8');
  const links = text.split('\n');
  assert.equal(links.length, 2);
  assert.match(base64Links(es), /^[A-Za-z0-9+/]+=*$/, 'standard base64 alphabet');
  for (const [i, link] of links.entries()) {
    const p = parseVlessLink(link);
    const c = es[i].configuration;
    assert.equal(p.id, c.id);
    assert.equal(p.address, c.address);
    assert.equal(p.port, c.port);
    assert.equal(p.network, c.network);
    assert.equal(p.path, c.path);
    assert.equal(p.security, c.security);
    assert.equal(p.remark, es[i].name);
  }
  assert.equal(base64Links([]), '', 'no session: an empty list');
});

test('clash: the YAML parses, and every proxy uses only Mihomo\'s documented vless fields', async () => {
  const es = entries(plain);
  const rendered = await render('clash', es, 'title');
  assert.match(rendered.contentType, /^text\/yaml/);
  const doc = parseYaml(rendered.body);
  assert.equal(doc['mixed-port'], 7890);
  assert.equal(doc['allow-lan'], false);
  assert.equal(doc.proxies.length, 2);
  for (const [i, p] of doc.proxies.entries()) {
    assertSubset(Object.keys(p), MIHOMO_VLESS_FIELDS, `proxy ${p.name}`);
    const c = es[i].configuration;
    assert.equal(p.type, 'vless');
    assert.equal(p.name, es[i].name);
    assert.equal(p.server, c.address);
    assert.equal(p.port, c.port);
    assert.equal(typeof p.port, 'number');
    assert.equal(p.uuid, c.id);
    assert.equal(p.tls, false);
    assert.equal(p.udp, true);
    assert.ok(MIHOMO_NETWORKS.has(p.network));
    assert.equal(p.network, c.network);
    if (c.network === 'ws') {
      assertSubset(Object.keys(p['ws-opts']), MIHOMO_WS_OPTS, 'ws-opts');
      assert.equal(p['ws-opts'].path, '/vless');
    } else assert.equal(p['ws-opts'], undefined);
    assert.equal(p['skip-cert-verify'], undefined, 'never an insecure switch');
  }
  const names = new Set(doc.proxies.map((p: { name: string }) => p.name));
  assert.equal(names.size, 2, 'proxy names are unique');
  assert.equal(doc['proxy-groups'].length, 1);
  const group = doc['proxy-groups'][0];
  assert.ok(MIHOMO_GROUP_TYPES.has(group.type));
  for (const n of group.proxies) assert.ok(names.has(n), `group names a proxy that exists: ${n}`);
  assert.deepEqual(doc.rules, [`MATCH,${group.name}`]);
});

test('sing-box: the JSON uses only sing-box\'s documented fields; the selector names real outbounds and the route ends in it', async () => {
  const es = entries(plain);
  const rendered = await render('sing-box', es, 'title');
  assert.match(rendered.contentType, /^application\/json/);
  const doc = JSON.parse(rendered.body);
  // tun for phones (the apps capture traffic only through a VPN interface), mixed for desktops.
  assert.deepEqual(doc.inbounds.map((i: { type: string }) => i.type), ['tun', 'mixed']);
  assertSubset(Object.keys(doc.inbounds[0]), SB_TUN, 'tun inbound');
  assert.equal(doc.inbounds[0].auto_route, true);
  assert.equal(doc.inbounds[0].strict_route, true, 'nothing leaks around the tunnel');
  assertSubset(Object.keys(doc.inbounds[1]), SB_MIXED, 'mixed inbound');
  assert.equal(doc.inbounds[1].listen, '127.0.0.1');
  assertSubset(Object.keys(doc.route), SB_ROUTE, 'route');
  assert.equal(doc.route.auto_detect_interface, true, 'a tun route must find the real interface');
  for (const r of doc.route.rules) assert.ok(SB_ACTIONS.has(r.action), `rule action ${r.action}`);
  assert.ok(doc.route.rules.some((r: { action: string }) => r.action === 'hijack-dns'), 'DNS of the tun is answered');
  const tags = new Map(doc.outbounds.map((o: { tag: string }) => [o.tag, o]));
  assert.equal(tags.size, doc.outbounds.length, 'tags are unique');
  const vless = doc.outbounds.filter((o: { type: string }) => o.type === 'vless');
  assert.equal(vless.length, 2);
  for (const [i, o] of vless.entries()) {
    assertSubset(Object.keys(o), SB_VLESS, `vless ${o.tag}`);
    const c = es[i].configuration;
    assert.equal(o.server, c.address);
    assert.equal(o.server_port, c.port);
    assert.equal(o.uuid, c.id);
    assert.ok(['', 'packetaddr', 'xudp'].includes(o.packet_encoding));
    assert.equal(o.tls, undefined, 'no TLS block without TLS');
    if (c.network === 'ws') {
      assertSubset(Object.keys(o.transport), SB_WS, 'ws transport');
      assert.equal(o.transport.type, 'ws');
      assert.equal(o.transport.path, '/vless');
    } else assert.equal(o.transport, undefined, 'raw TCP has no transport');
  }
  const selector = doc.outbounds.find((o: { type: string }) => o.type === 'selector');
  assertSubset(Object.keys(selector), SB_SELECTOR, 'selector');
  assert.deepEqual(selector.outbounds, vless.map((o: { tag: string }) => o.tag));
  assert.ok(selector.outbounds.includes(selector.default));
  for (const o of doc.outbounds.filter((x: { type: string }) => x.type === 'direct')) assertSubset(Object.keys(o), SB_DIRECT, 'direct');
  assert.equal(doc.route.final, selector.tag);
  assert.ok(tags.has(doc.route.final));
});

test('TLS fields of a configuration reach every format, with pinning and never an insecure switch', async () => {
  const tls: LinkSettings = { ...plain, publicHost: '203.0.113.7', tls: true, sni: 'vpn.example.com' };
  const pcs = 'ab'.repeat(32);
  const es = entries(tls, { fp: 'chrome', alpn: 'h2,http/1.1', pcs, vcn: 'vpn.example.com' });
  const x = xrayConfig(es, 't') as { outbounds: { tag: string; streamSettings?: { security: string; tlsSettings?: Record<string, unknown> } }[] };
  for (const o of x.outbounds.filter((o) => o.tag.startsWith('proxy-'))) {
    assert.equal(o.streamSettings?.security, 'tls');
    assert.deepEqual(o.streamSettings?.tlsSettings, {
      serverName: 'vpn.example.com',
      fingerprint: 'chrome',
      alpn: ['h2', 'http/1.1'],
      pinnedPeerCertSha256: pcs,
      verifyPeerCertByName: 'vpn.example.com',
    });
  }
  const c = parseYaml((await render('clash', es, 't')).body);
  for (const p of c.proxies) {
    assertSubset(Object.keys(p), MIHOMO_VLESS_FIELDS, 'tls proxy');
    assert.equal(p.tls, true);
    assert.equal(p.servername, 'vpn.example.com');
    assert.equal(p.fingerprint, pcs, 'Mihomo pins the certificate SHA-256 in `fingerprint`');
    assert.equal(p['client-fingerprint'], 'chrome');
    assert.deepEqual(p.alpn, ['h2', 'http/1.1']);
    assert.equal(p['skip-cert-verify'], undefined);
  }
  // sing-box trusts a self-signed server by its PEM (a line array), which the feed passes along.
  const pem = '-----BEGIN CERTIFICATE-----\nMIIBtest\nAAAA\n-----END CERTIFICATE-----\n';
  const s = singBoxConfig(es.map((e) => ({ ...e, certificatePem: pem }))) as { outbounds: Record<string, any>[] };
  for (const o of s.outbounds.filter((o) => o.type === 'vless')) {
    assertSubset(Object.keys(o.tls), SB_TLS, 'sing-box tls');
    assert.deepEqual(o.tls.certificate, ['-----BEGIN CERTIFICATE-----', 'MIIBtest', 'AAAA', '-----END CERTIFICATE-----']);
    assert.equal(o.tls.enabled, true);
    assert.equal(o.tls.server_name, 'vpn.example.com');
    assert.deepEqual(o.tls.alpn, ['h2', 'http/1.1']);
    assert.deepEqual(o.tls.utls, { enabled: true, fingerprint: 'chrome' });
    assert.equal(o.tls.insecure, undefined);
  }
  const all = [JSON.stringify(x), JSON.stringify(s), (await render('clash', es, 't')).body];
  for (const text of all) assert.ok(!/allowInsecure|skip-cert-verify|"insecure"/.test(text), 'no insecure switch');
});

test('no usable session: every format is still valid and sends nothing out directly', async () => {
  assert.equal((await render('base64', [], 't')).body, '');
  const x = xrayConfig([], 't') as any;
  assert.deepEqual(x.outbounds.map((o: any) => o.protocol), ['blackhole']);
  assert.equal(x.routing.rules[0].outboundTag, 'block');
  const s = singBoxConfig([]) as any;
  assert.deepEqual(s.route.rules, [{ inbound: ['tun-in', 'mixed-in'], action: 'reject' }]);
  const c = parseYaml((await render('clash', [], 't')).body);
  assert.deepEqual(c.proxies, []);
  assert.deepEqual(c.rules, ['MATCH,REJECT']);
  assert.deepEqual(clashConfig([]).rules, ['MATCH,REJECT']);
});

test('User-Agent table: each known client gets the format it reads; unknown ones base64', () => {
  const cases: [string | undefined, string][] = [
    ['v2rayN/7.10.5', 'base64'],
    ['v2rayNG/1.9.30', 'base64'],
    ['Xray/26.7.11', 'xray'],
    ['Xray-core/26.7.11', 'xray'],
    ['sing-box 1.12.4', 'sing-box'],
    ['SFA/1.11.9 (Android 14; sing-box 1.11.9)', 'sing-box'],
    ['SFI/1.11.4 (Build 1; sing-box 1.11.4; language en_US)', 'sing-box'],
    ['HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box', 'sing-box'],
    ['Hiddify/2.0', 'sing-box'],
    ['NekoBox/Android/1.3.9 (Prefer ClashMeta Format)', 'sing-box'],
    ['karing/1.1.2.606 android', 'sing-box'],
    ['clash.meta', 'clash'],
    ['ClashMetaForAndroid/2.11.1.Meta', 'clash'],
    ['mihomo/1.19.1', 'clash'],
    ['clash-verge/v2.2.3', 'clash'],
    ['Clash Verge Rev/2.0', 'clash'],
    ['Stash/3.0.2 Clash/1.12.0', 'clash'],
    ['FlClash/v0.8.80 clash-verge', 'clash'],
    ['ClashforWindows/0.20.39', 'clash'],
    ['curl/8.5.0', 'base64'],
    ['Mozilla/5.0 (X11; Linux x86_64)', 'base64'],
    ['', 'base64'],
    [undefined, 'base64'],
  ];
  for (const [ua, format] of cases) assert.equal(formatForUserAgent(ua), format, `User-Agent ${JSON.stringify(ua)}`);
});

test('miss limiter: an address is blocked after `max` misses for the rest of the window; others are not', () => {
  const l = new MissLimiter({ max: 3, windowMs: 10_000 });
  const t0 = 1_000_000;
  assert.equal(l.miss('a', t0), 0);
  assert.equal(l.miss('a', t0 + 1), 0);
  assert.equal(l.blockedFor('a', t0 + 2), 0);
  assert.equal(l.miss('a', t0 + 3), 10);
  assert.equal(l.blockedFor('a', t0 + 5_000), 5);
  assert.equal(l.blockedFor('b', t0 + 5_000), 0);
  assert.equal(l.blockedFor('a', t0 + 10_000), 0, 'a new window');
  assert.equal(l.miss('a', t0 + 10_001), 0);
});

test('secret: 256 bits from the 0600 key file and the nonce, the same on each derivation, another for another nonce', () => {
  const dir = tempDir();
  try {
    const key = loadServerKey(dir);
    assert.equal(key.length, 32);
    assert.equal(statSync(join(dir, KEY_FILES.subscription)).mode & 0o777, 0o600);
    assert.deepEqual(loadServerKey(dir), key, 'kept and reused');
    const s = new SubscriptionSecrets(key);
    const n1 = SubscriptionSecrets.newNonce();
    const n2 = SubscriptionSecrets.newNonce();
    assert.notEqual(n1, n2);
    assert.equal(Buffer.from(n1, 'base64url').length, 16);
    const a = s.secretOf(n1);
    assert.match(a, SECRET_SHAPE);
    assert.equal(Buffer.from(a, 'base64url').length, 32);
    assert.equal(s.secretOf(n1), a);
    assert.notEqual(s.secretOf(n2), a);
    assert.notEqual(new SubscriptionSecrets(Buffer.alloc(32, 1)).secretOf(n1), a, 'another key, another secret');
    assert.match(SubscriptionSecrets.hash(a), /^[0-9a-f]{64}$/);
  } finally {
    removeDir(dir);
  }
});

test('redactIds removes the whole subscription secret from paths and log text', () => {
  const secret = 'A'.repeat(20) + '_-' + 'b'.repeat(21);
  assert.equal(redactIds(`GET /sub/${secret}?format=xray 200 1.2ms`), 'GET /sub/…?format=xray 200 1.2ms');
  assert.equal(redactIds(`url=http://h:1/sub/${secret}`), 'url=http://h:1/sub/…');
  assert.equal(redactIds(`"/sub/${secret}"`), '"/sub/…"');
  assert.ok(!redactIds(`x /sub/${secret}/extra`).includes(secret));
});
