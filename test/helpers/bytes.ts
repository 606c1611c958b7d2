// Test payloads that no compression or repeated TLS record makes easy: `length` pseudo-random bytes
// (a linear congruential generator from `seed`, the same bytes every run), and their SHA-256.
import { createHash } from 'node:crypto';

export function pseudoRandomBytes(length: number, seed = 1): Buffer {
  const b = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < b.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
