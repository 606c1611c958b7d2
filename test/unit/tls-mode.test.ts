// decideTls / isLocalHost: which public hosts auto mode serves with TLS.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideTls, isLocalHost, parseTlsMode } from '../../server/tls/mode.ts';

const local = ['127.0.0.1', '127.8.9.10', '10.0.0.1', '10.255.3.4', '172.16.0.1', '172.31.255.254', '192.168.0.1', '192.168.1.20', '169.254.10.1', '100.64.0.9',
  '0.0.0.0', '::1', '[::1]', '::', 'fe80::1', 'fe80::1%eth0', 'fd12:3456::1', 'fc00::5', '::ffff:192.168.1.1', 'localhost', 'LOCALHOST', 'app.localhost', 'printer.local',
  'nas.lan', 'router.home.arpa', 'db.internal', 'myhost'];
const publicHosts = ['203.0.113.7', '8.8.8.8', '172.32.0.1', '172.15.255.255', '192.169.0.1', '11.0.0.1', '100.128.0.1', '2001:db8::7', '[2001:db8::7]', '2606:4700::1111',
  '::ffff:8.8.8.8', 'vpn.example.com', 'vpn.example.com.', 'local.example.com'];

test('loopback, private and link-local addresses and local names are local', () => {
  for (const h of local) assert.equal(isLocalHost(h), true, h);
});

test('everything else is public', () => {
  for (const h of publicHosts) assert.equal(isLocalHost(h), false, h);
});

test('auto turns TLS on for a public host and not for 127.0.0.1, 10.x or 192.168.x; on and off are what they say', () => {
  for (const h of publicHosts) {
    const d = decideTls('auto', h);
    assert.equal(d.enabled, true, h);
    assert.match(d.reason, /^auto: .* is public/);
  }
  for (const h of ['127.0.0.1', '10.1.2.3', '192.168.1.20']) {
    const d = decideTls('auto', h);
    assert.equal(d.enabled, false, h);
    assert.match(d.reason, /loopback, private or link-local/);
  }
  assert.equal(decideTls('auto', '127.0.0.1', true).enabled, true, 'given certificate files turn TLS on in auto mode');
  assert.equal(decideTls('on', '127.0.0.1').enabled, true);
  assert.equal(decideTls('off', '203.0.113.7').enabled, false);
});

test('parseTlsMode takes auto, on and off only', () => {
  assert.equal(parseTlsMode('auto'), 'auto');
  assert.equal(parseTlsMode('on'), 'on');
  assert.equal(parseTlsMode('off'), 'off');
  assert.equal(parseTlsMode(undefined), undefined);
  assert.equal(parseTlsMode('yes'), undefined);
  assert.equal(parseTlsMode('ON'), undefined);
});
