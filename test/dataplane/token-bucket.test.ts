// The token bucket: burst, rate over simulated time, rate changes, piece size.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { TokenBucket } from '../../server/dataplane/token-bucket.ts';

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
