// The proxy user string (contract/proxy-string.ts): build, parse with its error codes, the city
// escape, and property-tested round trips.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { buildProxyUser, parseProxyUser, cityToken, cityFromToken, isProxyUserError, type ParsedProxyUser, type ProxyTarget } from '../../server/contract/proxy-string.ts';

describe('proxy strings', () => {
  test('build', () => {
    assert.equal(buildProxyUser('u1'), 'u1');
    assert.equal(buildProxyUser('u1', { country: 'de' }), 'u1-cc-DE');
    assert.equal(buildProxyUser('u1', { country: 'US', city: 'New York' }), 'u1-cc-US-city-new.york');
    assert.equal(buildProxyUser('u1', { country: 'US', city: 'Winston-Salem', sessid: 'abc123', sesstime: 30, strict: true }), 'u1-cc-US-city-winston~salem-sessid-abc123-sesstime-30-strict');
    assert.equal(buildProxyUser('u1', { sessid: 'x' }), 'u1-sessid-x');
    assert.throws(() => buildProxyUser('u1', { city: 'x' }));
    assert.throws(() => buildProxyUser('u1', { country: 'USA' }));
    assert.throws(() => buildProxyUser('u1', { sessid: 'a_b' }));
    assert.throws(() => buildProxyUser('u1', { sessid: 'a'.repeat(33) }));
    assert.throws(() => buildProxyUser('u1', { sessid: 'a', sesstime: 1441 }));
    assert.throws(() => buildProxyUser('u1', { sessid: 'a', sesstime: 1.5 }));
    assert.throws(() => buildProxyUser('u1', { strict: true }));
  });
  test('parse', () => {
    assert.deepEqual(parseProxyUser('u1'), { user: 'u1' });
    assert.deepEqual(parseProxyUser('u1-cc-DE'), { user: 'u1', country: 'DE' });
    const id = randomUUID();
    assert.deepEqual(parseProxyUser(`${id}-cc-FR-city-paris`), { user: id, country: 'FR', city: 'paris' });
    assert.deepEqual(parseProxyUser(id), { user: id });
    assert.deepEqual(parseProxyUser(`${id}-cc-US-city-new.york-sessid-abc123-sesstime-30`), { user: id, country: 'US', city: 'new.york', sessid: 'abc123', sesstime: 30 });
    assert.deepEqual(parseProxyUser(`${id}-sessid-Z9-strict-cc-DE`), { user: id, sessid: 'Z9', strict: true, country: 'DE' });
  });
  test('each malformed name has its code, and names the user for authentication', () => {
    const id = randomUUID();
    const cases: [string, string][] = [
      ['', 'proxy_bad_param'],
      ['-cc-DE', 'proxy_bad_param'],
      [`${id}-town-x`, 'proxy_unknown_param'],
      [`${id}-cc-DE-City-x`, 'proxy_unknown_param'],
      [`${id}-cc-DE-cc-FR`, 'proxy_duplicate_param'],
      [`${id}-sessid-a-strict-strict`, 'proxy_duplicate_param'],
      [`${id}-cc-de`, 'proxy_bad_param'],
      [`${id}-cc-DEU`, 'proxy_bad_param'],
      [`${id}-cc-DE-city-New.York`, 'proxy_bad_param'],
      [`${id}-cc-DE-city-`, 'proxy_bad_param'],
      [`${id}-cc-US-city-.ny`, 'proxy_bad_param'],
      [`${id}-cc-US-city-a..b`, 'proxy_bad_param'],
      [`${id}-cc`, 'proxy_bad_param'],
      [`${id}-sessid-${'a'.repeat(33)}`, 'proxy_bad_param'],
      [`${id}-sessid-a_b`, 'proxy_bad_param'],
      [`${id}-sessid-a-sesstime-0`, 'proxy_bad_param'],
      [`${id}-sessid-a-sesstime-1441`, 'proxy_bad_param'],
      [`${id}-sessid-a-sesstime-010`, 'proxy_bad_param'],
      [`${id}-sesstime-10`, 'proxy_bad_param'],
      [`${id}-strict`, 'proxy_bad_param'],
      [`${id}-`, 'proxy_bad_param'],
      [`${id}-city-paris`, 'proxy_city_without_country'],
    ];
    for (const [name, code] of cases) {
      const r = parseProxyUser(name);
      assert.ok(isProxyUserError(r), name);
      assert.equal(r.error, code, name);
      assert.ok(r.message.length > 0);
      if (name.startsWith(id)) assert.equal(r.user, id, name);
    }
  });
  test('city tokens and the "-" escape', () => {
    assert.equal(cityToken('  São   Paulo '), 'são.paulo');
    assert.equal(cityToken('Winston-Salem'), 'winston~salem');
    assert.equal(cityToken('St. Louis'), 'st.louis');
    assert.equal(cityFromToken('winston~salem'), 'winston-salem');
    assert.equal(cityFromToken('new.york'), 'new york');
    const s = buildProxyUser('abc', { country: 'br', city: 'São Paulo' });
    assert.deepEqual(parseProxyUser(s), { user: 'abc', country: 'BR', city: 'são.paulo' });
  });
});

const word = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzçãéü'.split('')), minLength: 1, maxLength: 8 });
const cityName = fc.array(word, { minLength: 1, maxLength: 3 }).chain((ws) =>
  fc.array(fc.constantFrom(' ', '-', '  '), { minLength: ws.length - 1, maxLength: ws.length - 1 }).map((seps) => ws.map((w, i) => (i ? seps[i - 1] : '') + w).join('')));
const targets: fc.Arbitrary<{ user: string; target: ProxyTarget }> = fc.record({
  user: fc.oneof(fc.uuid(), fc.stringMatching(/^[a-z0-9]{1,12}$/)),
  country: fc.option(fc.stringMatching(/^[A-Za-z]{2}$/), { nil: undefined }),
  city: fc.option(cityName, { nil: undefined }),
  sessid: fc.option(fc.stringMatching(/^[A-Za-z0-9]{1,32}$/), { nil: undefined }),
  sesstime: fc.option(fc.integer({ min: 1, max: 1440 }), { nil: undefined }),
  strict: fc.boolean(),
}).map(({ user, country, city, sessid, sesstime, strict }) => ({
  user,
  target: {
    country,
    city: country ? city : undefined,
    sessid,
    sesstime: sessid ? sesstime : undefined,
    strict: sessid ? strict : undefined,
  },
}));

/** The parse result with only the keys that carry a value. */
const clean = (p: ParsedProxyUser) => Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined && v !== false));

describe('proxy strings: properties', () => {
  test('build then parse gives back every key, normalised', () => {
    fc.assert(fc.property(targets, ({ user, target }) => {
      const s = buildProxyUser(user, target);
      const p = parseProxyUser(s);
      assert.ok(!isProxyUserError(p), `${s}: ${isProxyUserError(p) ? p.message : ''}`);
      const want = clean({
        user,
        country: target.country?.toUpperCase(),
        city: target.city ? cityToken(target.city) : undefined,
        sessid: target.sessid,
        sesstime: target.sesstime,
        strict: target.strict,
      });
      assert.deepEqual(clean(p), want);
      if (target.city) assert.equal(cityFromToken(p.city!), target.city.toLowerCase().replace(/\s+/g, ' '));
      assert.equal(buildProxyUser(p.user, p), s, 'canonical names are fixed points');
    }), { numRuns: 500 });
  });
  test('any string parses to a result or a coded error, never throws; a result builds back to an equal parse', () => {
    const piece = fc.constantFrom('cc', 'city', 'sessid', 'sesstime', 'strict', 'DE', 'US', 'new.york', 'x', '30', '', 'a~b', '0', 'CC');
    const names = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.tuple(fc.uuid(), fc.array(piece, { maxLength: 8 })).map(([u, ps]) => [u, ...ps].join('-')),
    );
    fc.assert(fc.property(names, (name) => {
      const p = parseProxyUser(name);
      if (isProxyUserError(p)) {
        assert.match(p.error, /^proxy_(unknown_param|duplicate_param|bad_param|city_without_country)$/);
        return;
      }
      assert.deepEqual(parseProxyUser(buildProxyUser(p.user, p)), p);
    }), { numRuns: 1000 });
  });
});
