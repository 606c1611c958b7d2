// Unit tests: VLESS header parser, token bucket, proxy strings, egress policy, geo check.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buildVlessHeader, parseVlessHeader, formatUuid, parseUuid, VLESS_MAX_HEADER } from '../../server/dataplane/vless-header.ts';
import { TokenBucket } from '../../server/dataplane/token-bucket.ts';
import { isNonPublicAddress, resolveDestination } from '../../server/dataplane/egress.ts';
import { buildProxyUser, parseProxyUser, cityToken } from '../../server/contract/proxy-string.ts';
import { checkGeo } from '../../server/dataplane/proxy.ts';
import { ZONES } from './helpers/memory-deps.ts';

describe('VLESS header parser', () => {
  const id = randomUUID();
  for (const [address, type] of [['1.2.3.4', 'ipv4'], ['example.com', 'domain'], ['2001:db8::1', 'ipv6'], ['::1', 'ipv6'], ['fe80::1:2:3:4', 'ipv6']] as const) {
    test(`address type ${type}: ${address}`, () => {
      const h = buildVlessHeader({ id, command: 'tcp', port: 443, address });
      const r = parseVlessHeader(Buffer.concat([h, Buffer.from('payload')]));
      assert.equal(r.kind, 'ok');
      if (r.kind !== 'ok') return;
      assert.deepEqual(r.header, { id, command: 'tcp', port: 443, address, addressType: type });
      assert.equal(r.length, h.length);
    });
  }
  test('UDP command and addons are skipped', () => {
    const h = buildVlessHeader({ id, command: 'udp', port: 53, address: '9.9.9.9', addons: Buffer.from([0x0a, 3, 1, 2, 3]) });
    const r = parseVlessHeader(h);
    assert.equal(r.kind, 'ok');
    if (r.kind === 'ok') assert.equal(r.header.command, 'udp');
  });
  test('mux is recognised (to be refused)', () => {
    const r = parseVlessHeader(buildVlessHeader({ id, command: 'mux' }));
    assert.equal(r.kind === 'ok' && r.header.command, 'mux');
  });
  test('every strict prefix is "more"; split headers reassemble', () => {
    const h = buildVlessHeader({ id, command: 'tcp', port: 80, address: 'a-very-long-domain.example.org', addons: Buffer.alloc(40, 1) });
    for (let i = 0; i < h.length; i++) assert.equal(parseVlessHeader(h.subarray(0, i)).kind, 'more', `prefix ${i}`);
    assert.equal(parseVlessHeader(h).kind, 'ok');
  });
  test('hostile values are errors', () => {
    const good = buildVlessHeader({ id, command: 'tcp', port: 80, address: '1.2.3.4' });
    const bad = (mut: (b: Buffer) => void) => { const b = Buffer.from(good); mut(b); return parseVlessHeader(b); };
    assert.deepEqual(bad((b) => { b[0] = 1; }), { kind: 'error', reason: 'bad_version' });
    assert.deepEqual(bad((b) => { b[18] = 9; }), { kind: 'error', reason: 'bad_command' });
    assert.deepEqual(bad((b) => { b[19] = 0; b[20] = 0; }), { kind: 'error', reason: 'bad_port' });
    assert.deepEqual(bad((b) => { b[21] = 4; }), { kind: 'error', reason: 'bad_address_type' });
    const dom = (name: string) => parseVlessHeader(Buffer.concat([good.subarray(0, 21), Buffer.from([2, name.length]), Buffer.from(name, 'latin1')]));
    assert.deepEqual(dom(''), { kind: 'error', reason: 'bad_domain' });
    assert.deepEqual(dom('a b'), { kind: 'error', reason: 'bad_domain' });
    assert.deepEqual(dom('x\r\nHost: evil'), { kind: 'error', reason: 'bad_domain' });
    assert.deepEqual(dom('a..b'), { kind: 'error', reason: 'bad_domain' });
    assert.equal(dom('ok-name_1.example').kind, 'ok');
  });
  test('the longest header fits VLESS_MAX_HEADER', () => {
    const h = buildVlessHeader({ id, command: 'tcp', port: 1, address: 'a'.repeat(255), addons: Buffer.alloc(255) });
    assert.equal(h.length, VLESS_MAX_HEADER);
    assert.equal(parseVlessHeader(h).kind, 'ok');
  });
  test('uuid round trip', () => {
    assert.equal(formatUuid(parseUuid(id)!), id);
    assert.equal(parseUuid('nope'), undefined);
  });
});

describe('token bucket', () => {
  test('unlimited never waits', () => {
    const b = new TokenBucket(undefined, 0);
    assert.equal(b.reserve(1e9, 0), 0);
    assert.equal(b.limited, false);
  });
  test('a burst of a quarter second, then the rate', () => {
    const b = new TokenBucket(100_000, 0);
    assert.equal(b.reserve(25_000, 0), 0);
    assert.equal(b.reserve(1000, 0), 10); // 1000 bytes of debt at 100 kB/s
    // over 10 s of simulated time, the bytes admitted stay within 1% of rate * time
    let t = 0, sent = 0;
    const bb = new TokenBucket(50_000, 0);
    while (t < 10_000) {
      const wait = bb.reserve(4096, t);
      t += wait;
      if (t <= 10_000) sent += 4096;
    }
    assert.ok(Math.abs(sent - 500_000) / 500_000 < 0.04, `sent ${sent}`);
  });
  test('rate changes apply to the next reservation', () => {
    const b = new TokenBucket(1000, 0);
    b.reserve(100, 0);
    b.reserve(1000, 0); // into debt
    b.setRate(undefined, 10);
    assert.equal(b.reserve(1e6, 10), 0);
    b.setRate(2000, 20);
    assert.ok(b.reserve(2000, 20) > 0);
  });
  test('maxPiece keeps each wait near a quarter second', () => {
    assert.equal(new TokenBucket(40_000, 0).maxPiece(), 10_000);
    assert.equal(new TokenBucket(100, 0).maxPiece(), 256);
  });
});

describe('proxy strings', () => {
  test('build', () => {
    assert.equal(buildProxyUser('u1'), 'u1');
    assert.equal(buildProxyUser('u1', { country: 'de' }), 'u1-cc-DE');
    assert.equal(buildProxyUser('u1', { country: 'US', city: 'New York' }), 'u1-cc-US-city-new.york');
    assert.throws(() => buildProxyUser('u1', { city: 'x' }));
    assert.throws(() => buildProxyUser('u1', { country: 'USA' }));
  });
  test('parse', () => {
    assert.deepEqual(parseProxyUser('u1'), { user: 'u1' });
    assert.deepEqual(parseProxyUser('u1-cc-DE'), { user: 'u1', country: 'DE' });
    assert.deepEqual(parseProxyUser('u-x-cc-US-city-new.york'), { user: 'u-x', country: 'US', city: 'new.york' });
    const id = randomUUID();
    assert.deepEqual(parseProxyUser(`${id}-cc-FR-city-paris`), { user: id, country: 'FR', city: 'paris' });
    for (const bad of ['', '-cc-DE', 'u-cc-de', 'u-cc-DE-city-New.York', 'u-cc-DE-city-', 'u-cc-DE-town-x', 'u-cc-DEU', 'u-cc-US-city-.ny', 'u-cc-US-city-a..b']) {
      assert.equal(parseProxyUser(bad), undefined, bad);
    }
  });
  test('round trip and city tokens', () => {
    assert.equal(cityToken('  São   Paulo '), 'são.paulo');
    const s = buildProxyUser('abc', { country: 'br', city: 'São Paulo' });
    assert.deepEqual(parseProxyUser(s), { user: 'abc', country: 'BR', city: 'são.paulo' });
  });
  test('geo check against the zone catalogue', () => {
    assert.equal(checkGeo(ZONES), undefined);
    assert.equal(checkGeo(ZONES, 'DE'), undefined);
    assert.equal(checkGeo(ZONES, 'US', 'new.york'), undefined);
    assert.match(checkGeo(ZONES, 'FR') ?? '', /FR/);
    assert.match(checkGeo(ZONES, 'DE', 'berlin') ?? '', /berlin/);
  });
});

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
