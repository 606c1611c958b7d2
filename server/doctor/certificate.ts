// The TLS checks: the mode in force, the certificate's expiry and names, and the pin the links
// carry against the certificate each TLS listener actually serves (a TLS handshake, compared).
import type { X509Certificate } from 'node:crypto';
import { pinOf } from '../tls/certificates.ts';
import { isLocalHost } from '../tls/mode.ts';
import { certificateCovers } from '../tls/self-signed.ts';
import { type PortSpec, servedCertificate } from './ports.ts';
import { type Check, fail, messageOf, pass, warn } from './report.ts';

/** A certificate this close to its end is a warning. */
export const EXPIRY_WARN_DAYS = 14;
const DAY_MS = 86_400_000;

export interface TlsFacts {
  enabled: boolean;
  mode: string;
  reason: string;
  /** files, acme or self-signed; null when TLS is off. */
  source: string | null;
  /** The certificate in force as configured (files, the ACME or self-signed one of the data folder), if found. */
  cert?: X509Certificate;
  /** Why the configured certificate could not be read. */
  error?: string;
  /** The `pcs` the links carry: the SHA-256 of a self-signed certificate; null for a CA-signed one. */
  pin: string | null;
  /** The SHA-256 of the certificate the service uses (what it should serve). */
  fingerprint: string | null;
}

export function tlsModeCheck(t: TlsFacts, publicHost: string): Check {
  const title = 'TLS mode';
  if (!t.enabled) {
    if (isLocalHost(publicHost)) return pass('tls-mode', title, `off: ${t.reason}`);
    return fail('tls-mode', title, `off while the public host ${publicHost} is public: current clients refuse VLESS without TLS to it`, 'use --tls auto or --tls on');
  }
  if (t.error) return fail('tls-mode', title, `on, but the certificate cannot be read: ${t.error}`, 'give a readable PEM pair with --tls-cert/--tls-key (or remove them for a self-signed certificate)');
  return pass('tls-mode', title, `on (${t.source ?? 'certificate not made yet'}): ${t.reason}`);
}

/** Expiry of the served certificate (else the configured one): fail when expired, warn under 14 days. */
export function expiryCheck(cert: X509Certificate | undefined, now = Date.now()): Check {
  const title = 'TLS certificate expiry';
  if (!cert) return pass('tls-expiry', title, 'no certificate yet: serve makes a self-signed one at start');
  const notAfter = Date.parse(cert.validTo);
  const notBefore = Date.parse(cert.validFrom);
  const until = new Date(notAfter).toISOString();
  const renew = 'renew the certificate (a new --tls-cert/--tls-key pair, then SIGHUP; ACME renews by itself; a self-signed one is remade at the next start)';
  if (notAfter <= now) return fail('tls-expiry', title, `expired on ${until}: clients refuse the connection`, renew);
  if (notBefore > now) return fail('tls-expiry', title, `not valid before ${new Date(notBefore).toISOString()}: clients refuse it`, 'check this machine\'s clock, or issue a certificate valid now');
  const days = Math.floor((notAfter - now) / DAY_MS);
  if (days < EXPIRY_WARN_DAYS) return warn('tls-expiry', title, `expires in ${days} day${days === 1 ? '' : 's'} (${until})`, renew);
  return pass('tls-expiry', title, `valid until ${until} (${days} days)`);
}

/** The certificate's names cover the public host; a pinned (self-signed) one is verified by its pin instead. */
export function namesCheck(cert: X509Certificate | undefined, publicHost: string, pinned: boolean): Check {
  const title = 'TLS certificate names';
  if (!cert) return pass('tls-names', title, `no certificate yet: serve makes one for ${publicHost}`);
  const names = cert.subjectAltName ?? '(none)';
  if (certificateCovers(cert, publicHost)) return pass('tls-names', title, `${publicHost} is covered (${names})`);
  const fix = `issue the certificate for ${publicHost}, or set --public-host to a name it covers`;
  if (pinned) return warn('tls-names', title, `${publicHost} is not among its names (${names}); clients pinning it still connect`, fix);
  return fail('tls-names', title, `${publicHost} is not among its names (${names}): clients refuse the connection`, fix);
}

/**
 * The certificate each TLS listener serves against what the links expect: the pin they carry
 * (self-signed), else the certificate the service was given (a CA-signed one, verified by name).
 */
export async function pinCheck(t: TlsFacts, ports: PortSpec[], at: { publicHost: string; running: boolean }): Promise<{ check: Check; served?: X509Certificate }> {
  const title = 'TLS pin in links';
  const expected = t.pin ?? t.fingerprint;
  const what = t.pin ? `links pin sha256 ${t.pin}` : 'links carry no pin (the certificate is CA-signed and verified by name)';
  if (!at.running) return { check: pass('tls-pin', title, `${what}; not compared: the service is not running`) };
  const mismatched: string[] = [];
  const failed: string[] = [];
  let served: X509Certificate | undefined;
  for (const p of ports.filter((s) => s.tls)) {
    try {
      const cert = await servedCertificate(at.publicHost, p.port, at.publicHost);
      served ??= cert;
      if (expected && pinOf(cert) !== expected) mismatched.push(`port ${p.port} serves ${pinOf(cert)}`);
    } catch (err) {
      failed.push(`port ${p.port}: ${messageOf(err)}`);
    }
  }
  if (mismatched.length && t.pin) {
    return { served, check: fail('tls-pin', title, `${what}, but ${mismatched.join('; ')}: clients refuse the connection`,
      'restart serve so it serves (and links pin) one certificate, then have clients fetch their links or subscriptions again') };
  }
  if (mismatched.length) {
    return { served, check: warn('tls-pin', title, `the certificate given is sha256 ${expected}, but ${mismatched.join('; ')}`, 'send serve SIGHUP to reload the certificate files') };
  }
  if (failed.length) return { served, check: fail('tls-pin', title, `no TLS handshake: ${failed.join('; ')}`, 'check that the TLS listeners run and are reachable at the public host') };
  return { served, check: pass('tls-pin', title, `${what}; every TLS port serves ${served ? `sha256 ${pinOf(served)}` : 'it'}`) };
}

/** Every TLS check, the expiry and names judged on the certificate clients are served when it could be fetched. */
export async function tlsChecks(t: TlsFacts, ports: PortSpec[], at: { publicHost: string; running: boolean }, now = Date.now()): Promise<Check[]> {
  const mode = tlsModeCheck(t, at.publicHost);
  if (!t.enabled || t.error) return [mode];
  const pin = await pinCheck(t, ports, at);
  const cert = pin.served ?? t.cert;
  return [mode, expiryCheck(cert, now), namesCheck(cert, at.publicHost, t.pin !== null), pin.check];
}
