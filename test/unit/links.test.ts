// buildConfiguration / buildLink: the VLESS configuration and its share link.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildConfiguration, buildLink, type LinkSettings } from '../../server/links.ts';
import { nodeLink } from '../../server/sessions.ts';

const ID = '3f1c2a9e-7b4d-4c1e-9a2f-0123456789ab';
const base: LinkSettings = { publicHost: '127.0.0.1', network: 'ws', wsPort: 8787, tcpPort: null, wsPath: '/vless', tls: false };

test('ws without TLS: the documented example link', () => {
  const c = buildConfiguration(ID, base);
  assert.deepEqual(c, { protocol: 'vless', address: '127.0.0.1', port: 8787, id: ID, encryption: 'none', network: 'ws', security: 'none', path: '/vless' });
  assert.equal(buildLink(c, 'de-fra alice'), `vless://${ID}@127.0.0.1:8787?encryption=none&security=none&type=ws&path=%2Fvless#de-fra%20alice`);
});

test('TLS adds security=tls and an sni (the public host unless given)', () => {
  const c = buildConfiguration(ID, { ...base, publicHost: 'vpn.example.com', tls: true });
  assert.equal(c.security, 'tls');
  assert.equal(c.sni, 'vpn.example.com');
  assert.equal(buildLink(c, 'r'), `vless://${ID}@vpn.example.com:8787?encryption=none&security=tls&type=ws&path=%2Fvless&sni=vpn.example.com#r`);
  const own = buildConfiguration(ID, { ...base, publicHost: '203.0.113.7', tls: true, sni: 'front.example.net' });
  assert.equal(own.sni, 'front.example.net');
  assert.equal(new URL(buildLink(own, 'r')).searchParams.get('sni'), 'front.example.net');
  assert.equal(buildConfiguration(ID, base).sni, undefined, 'no sni without TLS');
});

test('tcp network uses the TCP port and has no path; without a TCP port it falls back to ws', () => {
  const c = buildConfiguration(ID, { ...base, network: 'tcp', tcpPort: 8789 });
  assert.equal(c.network, 'tcp');
  assert.equal(c.port, 8789);
  assert.equal(c.path, undefined);
  const link = buildLink(c, 'x');
  assert.equal(link, `vless://${ID}@127.0.0.1:8789?encryption=none&security=none&type=tcp#x`);
  assert.ok(!link.includes('path='));
  const fallback = buildConfiguration(ID, { ...base, network: 'tcp', tcpPort: null });
  assert.equal(fallback.network, 'ws');
  assert.equal(fallback.port, 8787);
});

test('an IPv6 host is bracketed in the link (and not twice)', () => {
  const c = buildConfiguration(ID, { ...base, publicHost: '::1' });
  assert.equal(c.address, '::1', 'the configuration keeps the bare address');
  const link = buildLink(c, 'v6');
  assert.ok(link.startsWith(`vless://${ID}@[::1]:8787?`), link);
  const u = new URL(link);
  assert.equal(u.hostname, '[::1]');
  assert.equal(u.port, '8787');
  const full = buildLink(buildConfiguration(ID, { ...base, publicHost: '2001:db8::5' }), 'v6');
  assert.equal(new URL(full).hostname, '[2001:db8::5]');
  const pre = buildLink(buildConfiguration(ID, { ...base, publicHost: '[2001:db8::5]' }), 'v6');
  assert.ok(pre.includes('@[2001:db8::5]:8787'), pre);
});

test('every part is percent-encoded: custom paths, remarks with spaces, unicode and reserved characters', () => {
  const c = buildConfiguration(ID, { ...base, wsPath: '/a b/c?d=e&f#g' });
  const link = buildLink(c, 'São Paulo #1 & co+more/x?');
  const u = new URL(link);
  assert.equal(u.searchParams.get('path'), '/a b/c?d=e&f#g');
  const rawPath = /[?&]path=([^&#]*)/.exec(link)![1];
  assert.equal(rawPath, '%2Fa%20b%2Fc%3Fd%3De%26f%23g');
  const remark = link.slice(link.indexOf('#') + 1);
  assert.equal(decodeURIComponent(remark), 'São Paulo #1 & co+more/x?');
  assert.ok(!/[ +#&?/]/.test(remark), remark);
});

test('property: the link always parses back to the configuration and the remark', () => {
  fc.assert(
    fc.property(
      fc.uuid(),
      fc.constantFrom('127.0.0.1', 'vpn.example.com', '::1', '2001:db8::1', 'localhost'),
      fc.integer({ min: 1, max: 65535 }),
      fc.string({ minLength: 1, maxLength: 20 }).map((p) => '/' + p),
      fc.boolean(),
      fc.string({ maxLength: 40 }),
      (id, host, port, path, tls, remark) => {
        const c = buildConfiguration(id, { ...base, publicHost: host, wsPort: port, wsPath: path, tls });
        const link = buildLink(c, remark);
        const u = new URL(link);
        assert.equal(u.protocol, 'vless:');
        assert.equal(decodeURIComponent(u.username), id);
        assert.equal(u.hostname, host.includes(':') ? `[${host}]` : host);
        assert.equal(u.port, String(port));
        assert.equal(u.searchParams.get('path'), path);
        assert.equal(u.searchParams.get('security'), tls ? 'tls' : 'none');
        assert.equal(u.searchParams.get('encryption'), 'none');
        assert.equal(decodeURIComponent(link.slice(link.indexOf('#') + 1)), remark);
        assert.ok(!link.slice(link.indexOf('#') + 1).includes(' '));
      },
    ),
    { numRuns: 200 },
  );
});

test('TLS fields of the share-link standard: sni, fp, alpn, pcs, vcn, percent-encoded, mirrored by the configuration', () => {
  const pcs = 'ab'.repeat(32);
  const c = buildConfiguration(ID, { ...base, publicHost: '203.0.113.7', tls: true, fp: 'chrome', alpn: ['h2', 'http/1.1'], pcs, vcn: 'vpn.example.com' });
  assert.deepEqual(c, {
    protocol: 'vless', address: '203.0.113.7', port: 8787, id: ID, encryption: 'none', network: 'ws', security: 'tls', path: '/vless',
    sni: '203.0.113.7', fp: 'chrome', alpn: 'h2,http/1.1', pcs, vcn: 'vpn.example.com',
  });
  const link = buildLink(c, 'r');
  assert.equal(link, `vless://${ID}@203.0.113.7:8787?encryption=none&security=tls&type=ws&path=%2Fvless&sni=203.0.113.7&fp=chrome&alpn=h2%2Chttp%2F1.1&pcs=${pcs}&vcn=vpn.example.com#r`);
  const p = new URL(link).searchParams;
  for (const k of ['sni', 'fp', 'alpn', 'pcs', 'vcn'] as const) assert.equal(p.get(k), c[k], k);
});

test('no vcn when the name to verify is the sni; no TLS fields at all without TLS; no pcs unless given (CA-signed)', () => {
  const same = buildConfiguration(ID, { ...base, publicHost: 'vpn.example.com', tls: true, fp: 'chrome', vcn: 'vpn.example.com' });
  assert.equal(same.vcn, undefined);
  assert.equal(same.pcs, undefined);
  const plain = buildConfiguration(ID, { ...base, tls: false, fp: 'chrome', alpn: ['http/1.1'], pcs: 'ab'.repeat(32), vcn: 'x.example' });
  assert.deepEqual(Object.keys(plain).sort(), ['address', 'encryption', 'id', 'network', 'path', 'port', 'protocol', 'security']);
  assert.equal(buildLink(plain, 'p'), `vless://${ID}@127.0.0.1:8787?encryption=none&security=none&type=ws&path=%2Fvless#p`);
});

test('a node\'s link: its host, ports, path and TLS, none of the control plane\'s own TLS facts', () => {
  const local: LinkSettings = { ...base, publicHost: 'cp.example.net', wsPath: '/custom', tls: true, fp: 'chrome', alpn: ['http/1.1'], pcs: 'aa'.repeat(32), vcn: 'cp.example.net' };
  const node = { id: 'n', name: 'sao-1', zone: 'br-sao', public_host: 'sao-1.example.net', vless_ws_port: 9443, vless_tcp_port: 9444, proxy_port: null, token_prefix: 'x', created_at: '', last_contact: null, up: true, stopped_at: null, clock_skew_ms: null };
  const plain = buildConfiguration(ID, nodeLink(local, { ...node, tls: false, tls_pcs: null }));
  assert.deepEqual(plain, { protocol: 'vless', address: 'sao-1.example.net', port: 9443, id: ID, encryption: 'none', network: 'ws', security: 'none', path: '/vless' });
  const pinned = buildConfiguration(ID, nodeLink(local, { ...node, tls: true, tls_pcs: 'bb'.repeat(32) }));
  assert.deepEqual(
    { security: pinned.security, sni: pinned.sni, fp: pinned.fp, alpn: pinned.alpn, pcs: pinned.pcs, vcn: pinned.vcn, path: pinned.path },
    { security: 'tls', sni: 'sao-1.example.net', fp: 'chrome', alpn: 'http/1.1', pcs: 'bb'.repeat(32), vcn: undefined, path: '/vless' },
  );
  // A CA-signed certificate on the node: verified the usual way, no pin.
  assert.equal(buildConfiguration(ID, nodeLink(local, { ...node, tls: true, tls_pcs: null })).pcs, undefined);
});
