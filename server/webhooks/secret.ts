// Webhook secrets and signatures.
//
// Choice: the signing secret must be readable again to sign (an HMAC needs the secret itself,
// unlike a token that is only compared), so it is ENCRYPTED at rest, not hashed: AES-256-GCM
// with a random 96-bit IV per secret, under a 32-byte key kept in `<data folder>/webhook.key`
// (mode 0600, created on first use), never in the database: a copied database alone cannot sign.
// In cluster mode the instances share the rows, so the key is the cluster's, kept in the
// database (store/repos/cluster-keys.ts), unless `webhooks.key` is given. The secret is shown once (POST answer) and never logged.
//
// Signature (as Stripe and GitHub do): `X-VAD-Signature: t=<unix seconds>,v1=<hex>` where hex is
// HMAC-SHA256(secret, `${t}.${body}`). The receiver recomputes it and refuses old timestamps.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { KEY_FILES, loadKeyFile } from '../key-file.ts';

const KEY_BYTES = 32;
/** The size of the webhook secrets' AES-256-GCM key. */
export const WEBHOOK_KEY_BYTES = KEY_BYTES;

export function loadWebhookKey(dataDir: string): Buffer {
  return loadKeyFile(dataDir, KEY_FILES.webhook, KEY_BYTES);
}

/** A new secret: `whsec_` and 32 random bytes in base64url. */
export function generateSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64url');
}

export class SecretBox {
  private readonly key: Buffer;
  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error('webhook key must be 32 bytes');
    this.key = key;
  }

  /** `v1.<iv>.<tag>.<ciphertext>` in base64url. */
  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [v, iv, tag, data] = sealed.split('.');
    if (v !== 'v1' || !iv || !tag || data === undefined) throw new Error('unknown sealed secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

export function signature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** The X-VAD-Signature header value. */
export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${signature(secret, timestamp, body)}`;
}

/** Verifies a header (what a receiver does); `toleranceS` bounds the timestamp's age. */
export function verifySignature(secret: string, header: string, body: string, nowS: number, toleranceS = 300): boolean {
  const parts = new Map(header.split(',').map((p) => p.split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowS - t) > toleranceS || !/^[0-9a-f]{64}$/.test(v1)) return false;
  return timingSafeEqual(Buffer.from(v1, 'hex'), Buffer.from(signature(secret, t, body), 'hex'));
}
