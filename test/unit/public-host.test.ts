// server/public-host.ts: what a wildcard bind (`--host 0.0.0.0` or `::`) writes into links, and
// how far a server without TLS is reachable (loopback, the local network, the internet).
import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import { test } from 'node:test';
import { choosePublicHost, clearTextReach } from '../../server/public-host.ts';

const v4 = (address: string, internal = false) => ({ address, family: 'IPv4', internal, netmask: '255.255.255.0', mac: '00:00:00:00:00:00', cidr: null }) as NetworkInterfaceInfo;
const v6 = (address: string, internal = false) => ({ address, family: 'IPv6', internal, netmask: 'ffff:ffff:ffff:ffff::', mac: '00:00:00:00:00:00', cidr: null, scopeid: 0 }) as NetworkInterfaceInfo;

const lan = { lo: [v4('127.0.0.1', true), v6('::1', true)], eth0: [v6('fe80::1'), v4('192.168.1.20'), v6('2001:db8::20')] };
const publicToo = { lo: [v4('127.0.0.1', true)], docker0: [v4('169.254.3.3')], eth0: [v4('203.0.113.7')], wlan0: [v4('10.0.0.9')] };
const loopbackOnly = { lo: [v4('127.0.0.1', true), v6('::1', true)] };

test('a specific bind host is its own public host', () => {
  assert.equal(choosePublicHost('127.0.0.1', lan), '127.0.0.1');
  assert.equal(choosePublicHost('192.168.1.20', lan), '192.168.1.20');
  assert.equal(choosePublicHost('vpn.example.com', lan), 'vpn.example.com');
});

test('a wildcard bind picks the first non-internal interface address (no link-local), never 127.0.0.1', () => {
  assert.equal(choosePublicHost('0.0.0.0', lan), '192.168.1.20');
  assert.equal(choosePublicHost('0.0.0.0', publicToo), '203.0.113.7');
  assert.equal(choosePublicHost('::', lan), '192.168.1.20'); // IPv4 first: every client reaches it
  assert.equal(choosePublicHost('::', { eth0: [v6('fe80::1'), v6('2001:db8::20')] }), '2001:db8::20');
  assert.equal(choosePublicHost('0.0.0.0', { eth0: [v6('2001:db8::20')] }), null, '0.0.0.0 listens on IPv4 only');
  assert.equal(choosePublicHost('0.0.0.0', loopbackOnly), null);
  assert.equal(choosePublicHost('::', loopbackOnly), null);
});

test('how far clear text reaches: loopback, the local network, or the internet', () => {
  assert.equal(clearTextReach('127.0.0.1', '127.0.0.1', lan), 'loopback');
  assert.equal(clearTextReach('::1', 'localhost', lan), 'loopback');
  assert.equal(clearTextReach('192.168.1.20', '192.168.1.20', lan), 'local');
  assert.equal(clearTextReach('0.0.0.0', '192.168.1.20', lan), 'local');
  // Beyond: a public bind address, a public name in the links, or a wildcard over a public interface.
  assert.equal(clearTextReach('203.0.113.7', '203.0.113.7', publicToo), 'internet');
  assert.equal(clearTextReach('192.168.1.20', 'vpn.example.com', lan), 'internet');
  assert.equal(clearTextReach('0.0.0.0', '10.0.0.9', publicToo), 'internet');
  assert.equal(clearTextReach('::', '192.168.1.20', lan), 'internet', 'the IPv6 global address 2001:db8::20 is on the wildcard too');
  // Loopback bind behind a TLS-terminating proxy: the links name the proxy, clear text stays on this machine.
  assert.equal(clearTextReach('127.0.0.1', 'vpn.example.com', lan), 'loopback');
});
