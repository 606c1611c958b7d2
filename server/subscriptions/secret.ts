// The secret in a subscription URL (`/sub/<secret>`), kept apart from API tokens.
//
// Choice: the secret is derived, not stored. Each subscription row keeps a random 128-bit
// `nonce`; the secret is HMAC-SHA256(server key, nonce) in base64url (256 bits, unguessable).
// The server key is 32 random bytes in `<data folder>/subscription.key` (mode 0600), created on
// first use. So:
// - GET /v2/subscriptions/{client_id} shows the same URL again (re-derived from the nonce);
// - the database alone (a copied backup) cannot produce a working URL: it holds the nonce and
//   SHA-256(secret), which finds a request's row by index without keeping the secret (in cluster
//   mode the key is the cluster's, in the database: store/repos/cluster-keys.ts);
// - rotation is a new nonce, so the old secret's hash no longer matches any row.
// Deriving rather than encrypting needs no IV or cipher state. Losing the key file ends every
// URL (a rotation issues new ones), as losing an encryption key would.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { KEY_FILES, loadKeyFile } from '../key-file.ts';

export const KEY_BYTES = 32;
/** base64url of 32 bytes. Anything else in /sub/<...> is not ours (answered like an unknown secret). */
export const SECRET_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Reads the server key from the data folder, creating it (0600) when it is missing. */
export function loadServerKey(dataDir: string): Buffer {
  return loadKeyFile(dataDir, KEY_FILES.subscription, KEY_BYTES);
}

export class SubscriptionSecrets {
  private readonly key: Buffer;
  constructor(key: Buffer) {
    this.key = key;
  }
  /** A fresh random nonce for a new or rotated subscription (128 bits). */
  static newNonce(): string {
    return randomBytes(16).toString('base64url');
  }
  secretOf(nonce: string): string {
    return createHmac('sha256', this.key).update(`vad-subscription:${nonce}`, 'utf8').digest('base64url');
  }
  static hash(secret: string): string {
    return createHash('sha256').update(secret, 'utf8').digest('hex');
  }
}
