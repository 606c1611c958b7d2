// extractToken (both header forms) and the token cache.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { extractToken, TokenCache } from '../../server/plugins/auth.ts';
import { openDatabase } from '../../server/store/db.ts';
import { Store } from '../../server/store/store.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const T = 'vad_AbC-123_xyz';

test('extractToken: Bearer in any case, or the bare token; surrounding space ignored', () => {
  for (const h of [`Bearer ${T}`, `bearer ${T}`, `BEARER ${T}`, `BeArEr ${T}`, `Bearer    ${T}`, `Bearer\t${T}`, T, `  ${T}  `, `  Bearer ${T} `]) {
    assert.equal(extractToken(h), T, JSON.stringify(h));
  }
  for (const tok of ['a', 'A.b_c~d+e/f=g-h', 'x'.repeat(512)]) assert.equal(extractToken(`Bearer ${tok}`), tok);
});

test('extractToken: missing or malformed headers give undefined', () => {
  for (const h of [undefined, '', '   ', 'Bearer a b', `Basic ${T} x`, 'tok"en', 'to ken', 'Bearer tok,en', 'x'.repeat(513), `Bearer ${'x'.repeat(513)}`, 'Bearer é', 'Bearer \u0000']) {
    assert.equal(extractToken(h), undefined, JSON.stringify(h));
  }
  assert.equal(extractToken([`Bearer ${T}`, `Bearer ${T}`]), undefined, 'a repeated header is refused');
});

test('extractToken: the word Bearer alone is a (wrong) token, not a crash', () => {
  assert.equal(extractToken('Bearer'), 'Bearer');
  assert.equal(extractToken('Bearer '), 'Bearer');
});

test('property: extractToken never throws and returns only token-shaped strings', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 600 }), fc.string({ unit: 'binary', maxLength: 50 }), fc.string().map((s) => `Bearer ${s}`)), (h) => {
      const t = extractToken(h);
      if (t !== undefined) assert.match(t, /^[A-Za-z0-9._~+/=-]{1,512}$/);
    }),
    { numRuns: 500 },
  );
});

test('TokenCache: finds tokens and caches look-ups; revocations are seen at once in-process, within checkMs from another process', async () => {
  const dir = tempDir('vad-auth-');
  const store = new Store(openDatabase(dir));
  const otherProcess = new Store(openDatabase(dir)); // a second connection, like the CLI
  try {
    const { token, info } = store.createToken('acme', 'agent');
    const cache = new TokenCache(store, 60_000, 10_000, 50);
    assert.equal(cache.find(token)?.id, info.id);
    assert.equal(cache.find(token)?.role, 'agent');
    assert.equal(cache.find('vad_unknown'), undefined);
    store.revokeToken(token);
    assert.equal(cache.find(token), undefined, 'revoked through the same Store: seen at once');

    const second = store.createToken('acme', 'owner');
    assert.equal(cache.find(second.token)?.role, 'owner', 'a token created after a miss is found');
    assert.ok(otherProcess.revokeToken(second.token));
    const revokedAt = Date.now();
    while (cache.find(second.token) !== undefined) {
      assert.ok(Date.now() - revokedAt < 1000, 'revocation by another connection seen within checkMs');
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(Date.now() - revokedAt < 500);

    const third = otherProcess.createToken('acme', 'agent');
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(cache.find(third.token)?.role, 'agent', 'a token made by another process is found');

    const small = new TokenCache(store, 60_000, 3);
    for (let i = 0; i < 10; i++) small.find(`vad_miss_${i}`);
    const fresh = store.createToken('acme', 'owner');
    assert.equal(small.find(fresh.token)?.role, 'owner', 'a bounded cache still finds new tokens');
  } finally {
    otherProcess.db.close();
    store.db.close();
    removeDir(dir);
  }
});
