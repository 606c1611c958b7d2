// The self-signed certificate used when TLS is on and no certificate was given: generated on the
// first start for the public host (its IP address or name in the subject alternative names),
// kept in the data folder (files 0600) and reused while it still covers the host and is not near
// expiry. Clients trust it by pinning its SHA-256 (`pcs`), so reuse keeps links valid.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';

export const SELF_SIGNED_DAYS = 825;
/** A stored certificate this close to expiry is replaced at start. */
const RENEW_BEFORE_MS = 30 * 86_400_000;

export interface PemPair {
  cert: string;
  key: string;
}

export function selfSignedPaths(dataDir: string): { dir: string; cert: string; key: string } {
  const dir = join(dataDir, 'tls');
  return { dir, cert: join(dir, 'self-signed-cert.pem'), key: join(dir, 'self-signed-key.pem') };
}

function bareHost(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** True when the certificate names the host (IP SAN for an address, DNS SAN otherwise). */
export function certificateCovers(cert: X509Certificate, host: string): boolean {
  const h = bareHost(host);
  return isIP(h) ? cert.checkIP(h) !== undefined : cert.checkHost(h, { subject: 'never' }) !== undefined;
}

function usable(pair: PemPair, host: string): boolean {
  try {
    const cert = new X509Certificate(pair.cert);
    if (!cert.checkPrivateKey(createPrivateKey(pair.key))) return false;
    if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_MS) return false;
    return certificateCovers(cert, host);
  } catch {
    return false;
  }
}

async function generate(host: string): Promise<PemPair> {
  // Loaded on first use: the generator and its X.509 library are a tenth of a start-up otherwise.
  // Through `default` (module.exports of this CommonJS package): the server bundle's chunk of it
  // has no named exports, only under Node's own loader are they there too.
  const { generate: generateSelfSigned } = (await import('selfsigned')).default;
  const h = bareHost(host);
  const notBeforeDate = new Date(Date.now() - 3_600_000); // an hour of slack for clients with a slow clock
  const notAfterDate = new Date(notBeforeDate.getTime() + SELF_SIGNED_DAYS * 86_400_000);
  const altNames = isIP(h) ? [{ type: 7 as const, ip: h }] : [{ type: 2 as const, value: h }];
  const pems = await generateSelfSigned([{ name: 'commonName', value: h }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/** Writes a secret file 0600. */
export function writePrivate(file: string, text: string): void {
  // Written aside and renamed, so a crash never leaves half a key; 0600 from the first byte.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** The stored self-signed certificate for the host, or a new one (stored) when there is none usable. */
export async function loadOrCreateSelfSigned(dataDir: string, host: string): Promise<PemPair & { created: boolean }> {
  const p = selfSignedPaths(dataDir);
  if (existsSync(p.cert) && existsSync(p.key)) {
    const stored = { cert: readFileSync(p.cert, 'utf8'), key: readFileSync(p.key, 'utf8') };
    if (usable(stored, host)) return { ...stored, created: false };
  }
  const fresh = await generate(host);
  mkdirSync(p.dir, { recursive: true, mode: 0o700 });
  writePrivate(p.key, fresh.key);
  writePrivate(p.cert, fresh.cert);
  return { ...fresh, created: true };
}
