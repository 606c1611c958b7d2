// The proxy's geo check (proxy.ts checkGeo) against the zone catalogue, on its own.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { checkGeo } from '../../server/dataplane/proxy.ts';
import { ZONES } from './helpers/memory-deps.ts';

describe('proxy geo check', () => {
  test('geo check against the zone catalogue', () => {
    assert.equal(checkGeo(ZONES), undefined);
    assert.equal(checkGeo(ZONES, 'DE'), undefined);
    assert.equal(checkGeo(ZONES, 'US', 'new.york'), undefined);
    assert.match(checkGeo(ZONES, 'FR') ?? '', /FR/);
    assert.match(checkGeo(ZONES, 'DE', 'berlin') ?? '', /berlin/);
  });
});
