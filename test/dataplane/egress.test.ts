// The egress policy: which addresses are not public, and names resolved before the check.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { isNonPublicAddress, resolveDestination } from '../../server/dataplane/egress.ts';

describe('egress policy', () => {
  test('non-public addresses', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', 'ff02::1']) {
      assert.equal(isNonPublicAddress(ip), true, ip);
    }
    for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '100.128.0.1']) {
      assert.equal(isNonPublicAddress(ip), false, ip);
    }
  });
  test('public-only resolves names before checking (localhost is refused)', async () => {
    await assert.rejects(resolveDestination('localhost', 'public-only'), /not allowed/);
    await assert.rejects(resolveDestination('127.0.0.1', 'public-only'), /not allowed/);
    await assert.rejects(resolveDestination('[::1]'.slice(1, -1), 'public-only'), /not allowed/);
    assert.deepEqual(await resolveDestination('127.0.0.1', 'allow-all'), { address: '127.0.0.1', family: 4 });
    assert.deepEqual(await resolveDestination('8.8.8.8', 'public-only'), { address: '8.8.8.8', family: 4 });
  });
});
