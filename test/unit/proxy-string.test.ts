// The proxy user string (contract/proxy-string.ts): build, parse, round trip, city tokens.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buildProxyUser, parseProxyUser, cityToken } from '../../server/contract/proxy-string.ts';

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
});
