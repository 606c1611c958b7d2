// The address choice of "Let other devices connect" (main/lan.ts), the import links of the
// client view (renderer/src/lib/import-links.ts) and the IPC argument checks of the new
// operations (main/ipc.ts), with no Electron: a recording stand-in for ipcMain.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { networkInterfaces } from 'node:os';
import { isPrivateV4, listAddresses, pickLanAddress, type Interfaces } from '../../main/lan.ts';
import { importLinks, profileName } from '../../renderer/src/lib/import-links.ts';
import { OP_NAMES, registerIpc, type Handlers } from '../../main/ipc.ts';
import { isImportLink } from '../../main/security.ts';

const v4 = (address: string, internal = false) => ({ address, netmask: '255.255.255.0', family: 'IPv4' as const, mac: '00:00:00:00:00:00', internal, cidr: `${address}/24` });
const v6 = (address: string, internal = false, scopeid = 0) => ({ address, netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6' as const, mac: '00:00:00:00:00:00', internal, cidr: `${address}/64`, scopeid });

const LAPTOP: Interfaces = {
  lo: [v4('127.0.0.1', true), v6('::1', true)],
  docker0: [v4('172.17.0.1')],
  wlan0: [v4('192.168.1.23'), v6('fe80::1c2b:3d4e:5f60:7182', false, 3), v6('2001:db8:1::23')],
  tun0: [v4('100.64.3.7')],
};

test('listAddresses: non-internal IPv4 and IPv6 in interface order, no loopback, no link-local IPv6', () => {
  assert.deepEqual(listAddresses(LAPTOP), [
    { address: '172.17.0.1', family: 4, interface: 'docker0', lan: true },
    { address: '192.168.1.23', family: 4, interface: 'wlan0', lan: true },
    { address: '2001:db8:1::23', family: 6, interface: 'wlan0', lan: false },
    { address: '100.64.3.7', family: 4, interface: 'tun0', lan: false },
  ]);
});

test('listAddresses: an address on two interfaces is listed once; empty or missing lists are fine', () => {
  assert.deepEqual(listAddresses({ a: [v4('10.0.0.5')], b: [v4('10.0.0.5')], c: [], d: undefined }), [{ address: '10.0.0.5', family: 4, interface: 'a', lan: true }]);
  assert.deepEqual(listAddresses({}), []);
});

test('listAddresses on this machine: every entry is a real, non-internal interface address', () => {
  const real = networkInterfaces();
  for (const a of listAddresses()) {
    const info = real[a.interface]?.find((i) => i.address.split('%')[0] === a.address);
    assert.ok(info && !info.internal, `${a.address} on ${a.interface}`);
  }
});

test('pickLanAddress: the first private IPv4 (real interfaces before container bridges), else the first IPv4, else the first address, else null', () => {
  assert.equal(pickLanAddress(listAddresses(LAPTOP)), '192.168.1.23', 'the Wi-Fi address, not the Docker bridge listed before it');
  assert.equal(pickLanAddress(listAddresses({ docker0: [v4('172.17.0.1')], tun0: [v4('100.64.3.7')] })), '172.17.0.1', 'a bridge when it is the only private address');
  assert.equal(pickLanAddress(listAddresses({ tun0: [v4('100.64.3.7')], wlan0: [v4('192.168.0.9')] })), '192.168.0.9');
  assert.equal(pickLanAddress(listAddresses({ eth0: [v6('2001:db8::5'), v4('203.0.113.9')] })), '203.0.113.9');
  assert.equal(pickLanAddress(listAddresses({ eth0: [v6('2001:db8::5')] })), '2001:db8::5');
  assert.equal(pickLanAddress([]), null);
});

test('isPrivateV4: RFC 1918 only', () => {
  for (const a of ['10.1.2.3', '172.16.0.1', '172.31.255.254', '192.168.178.20']) assert.equal(isPrivateV4(a), true, a);
  for (const a of ['172.32.0.1', '100.64.0.1', '127.0.0.1', '169.254.1.1', '8.8.8.8', 'fd00::1', 'nonsense']) assert.equal(isPrivateV4(a), false, a);
});

test('importLinks: each app gets the format it reads, percent-encoded where the scheme wants it', () => {
  const url = 'http://192.168.1.23:8787/sub/AbC_123-x';
  const sub = { url, format_urls: { base64: `${url}?format=base64`, xray: `${url}?format=xray`, 'sing-box': `${url}?format=sing-box`, clash: `${url}?format=clash` } };
  const links = Object.fromEntries(importLinks(sub, profileName('alice@example.com')).map((l) => [l.app, l.href]));
  assert.equal(links.v2rayNG, `v2rayng://install-config?url=${encodeURIComponent(url)}`);
  assert.equal(links.Hiddify, `hiddify://import/${url}#VPN%20Access%20alice%40example.com`);
  assert.equal(links['sing-box'], `sing-box://import-remote-profile?url=${encodeURIComponent(`${url}?format=sing-box`)}#VPN%20Access%20alice%40example.com`);
  assert.equal(links['Clash Meta (Mihomo)'], `clash://install-config?url=${encodeURIComponent(`${url}?format=clash`)}`);
  // The embedded URL comes back whole from each scheme's parameter.
  assert.equal(new URL(links['sing-box']).searchParams.get('url'), `${url}?format=sing-box`);
  assert.equal(new URL(links.v2rayNG).searchParams.get('url'), url);
});

test('isImportLink: the import schemes of the client view leave the window, nothing else does', () => {
  const sub = { url: 'http://192.168.1.23:8787/sub/x', format_urls: { base64: 'a', xray: 'b', 'sing-box': 'http://192.168.1.23:8787/sub/x?format=sing-box', clash: 'http://h/sub/x?format=clash' } };
  for (const l of importLinks(sub, 'n')) assert.equal(isImportLink(l.href), true, l.href);
  for (const bad of ['https://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'v2rayng://other', 'clash://install-config', 'sing-box://x', `hiddify://import/${'a'.repeat(5000)}`]) {
    assert.equal(isImportLink(bad), false, bad.slice(0, 40));
  }
});

test('IPC: the subscription and LAN operations check their arguments before any handler runs', async () => {
  const channels = new Map<string, (event: unknown, ...args: unknown[]) => Promise<unknown>>();
  const calls: string[] = [];
  const handlers = Object.fromEntries(
    OP_NAMES.map((n) => [
      n,
      async (...args: unknown[]) => {
        calls.push(`${n}(${JSON.stringify(args)})`);
        return { ok: true, value: true };
      },
    ]),
  ) as unknown as Handlers;
  registerIpc({ handle: (c, l) => void channels.set(c, l as never), removeHandler: (c) => void channels.delete(c) }, handlers, () => true);
  const call = (name: string, ...args: unknown[]) => channels.get(`app:${name}`)!({ senderFrame: {} }, ...args) as Promise<{ ok: boolean; error?: { code: string } }>;
  for (const op of ['getSubscription', 'putSubscription', 'deleteSubscription']) {
    assert.equal((await call(op, 'alice@example.com')).ok, true, op);
    for (const bad of [[], [''], ['a/b'], ['x'.repeat(129)], [42], ['ok', 'extra']]) {
      const r = await call(op, ...bad);
      assert.equal(r.ok, false, `${op}(${JSON.stringify(bad)})`);
      assert.equal(r.error?.code, 'invalid_request');
    }
  }
  assert.equal((await call('lanSharing')).ok, true);
  assert.equal((await call('lanSharing', 'x')).ok, false);
  assert.equal((await call('setLanSharing', { enabled: true, address: '192.168.1.23' })).ok, true);
  assert.equal((await call('setLanSharing', { enabled: false })).ok, true);
  assert.equal((await call('setLanSharing', { enabled: true, address: 'fe80::1' })).ok, true);
  for (const bad of [[], [{}], [{ enabled: 'yes' }], [{ enabled: true, address: 'evil.example.com' }], [{ enabled: true, address: '1.2.3.4', port: 1 }], [null]]) {
    const r = await call('setLanSharing', ...bad);
    assert.equal(r.ok, false, JSON.stringify(bad));
  }
  assert.deepEqual(calls.filter((c) => c.startsWith('setLanSharing')).length, 3);
});

test('the embedded server binds loopback with the default egress, or the shared address with the lan policy', async () => {
  const { embeddedBind, LOOPBACK_BIND } = await import('../../main/endpoint.ts');
  assert.deepEqual(embeddedBind(undefined), LOOPBACK_BIND);
  assert.equal(LOOPBACK_BIND.egress, undefined, 'loopback: the server default (public-only)');
  assert.deepEqual(embeddedBind({ enabled: false, address: '192.168.1.20' }), LOOPBACK_BIND);
  assert.deepEqual(embeddedBind({ enabled: true, address: '192.168.1.20' }), { host: '192.168.1.20', publicHost: '192.168.1.20', egress: 'lan' });
});
