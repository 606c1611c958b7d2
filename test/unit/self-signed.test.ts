// loadOrCreateSelfSigned: one certificate per data folder, for the public host, reused until the
// host changes; the TLS link fields follow what the certificate is.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { statSync } from 'node:fs';
import { test } from 'node:test';
import { inspect } from '../../server/tls/certificates.ts';
import { loadOrCreateSelfSigned, selfSignedPaths } from '../../server/tls/self-signed.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

test('made once for the host (IP or DNS name in the SAN), 0600, reused, remade when the host changes', async () => {
  const d = tempDir();
  try {
    const first = await loadOrCreateSelfSigned(d, '203.0.113.7');
    assert.equal(first.created, true);
    const x = new X509Certificate(first.cert);
    assert.equal(x.subjectAltName, 'IP Address:203.0.113.7');
    assert.equal(x.ca, false);
    assert.ok(Date.parse(x.validTo) - Date.now() > 800 * 86_400_000);
    const p = selfSignedPaths(d);
    assert.equal(statSync(p.key).mode & 0o777, 0o600);
    assert.equal(statSync(p.cert).mode & 0o777, 0o600);
    const facts = inspect(first);
    assert.equal(facts.selfSigned, true);
    assert.equal(facts.fingerprint, x.fingerprint256.replaceAll(':', '').toLowerCase());
    assert.deepEqual(facts.names, ['203.0.113.7']);

    const again = await loadOrCreateSelfSigned(d, '203.0.113.7');
    assert.equal(again.created, false);
    assert.equal(again.cert, first.cert);

    const named = await loadOrCreateSelfSigned(d, 'vpn.example.com');
    assert.equal(named.created, true);
    assert.equal(new X509Certificate(named.cert).subjectAltName, 'DNS:vpn.example.com');
    const v6 = await loadOrCreateSelfSigned(d, '[2001:db8::7]');
    assert.equal(new X509Certificate(v6.cert).checkIP('2001:db8::7'), '2001:db8::7');
  } finally {
    removeDir(d);
  }
});

test('inspect refuses a key that does not belong to the certificate', async () => {
  const a = tempDir();
  const b = tempDir();
  try {
    const one = await loadOrCreateSelfSigned(a, '203.0.113.7');
    const two = await loadOrCreateSelfSigned(b, '203.0.113.7');
    assert.throws(() => inspect({ cert: one.cert, key: two.key }), /does not belong/);
  } finally {
    removeDir(a);
    removeDir(b);
  }
});
