// One TLS certificate for every listener (API port with VLESS over ws, raw TCP inbound, proxy):
// decides the mode, finds the certificate (given files, else a stored self-signed one), describes
// it for links and server-info, and swaps it in place when the files change or on SIGHUP.
// Swapping uses setSecureContext, which only affects new handshakes: open connections keep theirs.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from '../domain.ts';
// acme.ts (and acme-client, axios and their dependencies with it) is imported only when ACME is
// configured (openAcme): every other start would pay for loading them.
import type { AcmeIssuer, AcmeOptions } from './acme.ts';
import { decideTls, type TlsMode } from './mode.ts';
import { certificateCovers, loadOrCreateSelfSigned, type PemPair } from './self-signed.ts';

export type TlsSource = 'files' | 'acme' | 'self-signed';

/** What server-info reports (snake_case, as on the wire). */
export interface TlsStatus {
  mode: TlsMode;
  enabled: boolean;
  reason: string;
  source: TlsSource | null;
  /** True when the certificate is its own issuer: clients must pin it (`pcs`). */
  self_signed: boolean | null;
  fingerprint_sha256: string | null;
  not_after: string | null;
  names: string[];
}

export interface TlsOptions {
  mode: TlsMode;
  publicHost: string;
  dataDir: string;
  /** Certificate and key files, watched for changes. */
  certFile?: string;
  keyFile?: string;
  /** Certificate and key given as PEM text (not watched). */
  pem?: PemPair;
  /** Certificates from an ACME CA for this domain (used when no files or PEM are given). */
  acme?: AcmeOptions;
  /** How often the files are checked for a change; default 2000 ms; 0: only reload() (SIGHUP). */
  watchIntervalMs?: number;
  log: Logger;
}

export interface CertificateFacts {
  fingerprint: string;
  selfSigned: boolean;
  notAfter: string;
  names: string[];
  x509: X509Certificate;
}

/** The certificate's SHA-256 over its DER, lower-case hex without colons (the link's `pcs`). */
export function pinOf(cert: X509Certificate): string {
  return cert.fingerprint256.replaceAll(':', '').toLowerCase();
}

function namesOf(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .map((part) => /^(?:DNS|IP Address):(.+)$/.exec(part)?.[1])
    .filter((n): n is string => Boolean(n));
}

/** Reads a PEM pair and checks it: the key matches the certificate. Throws a readable error. */
export function inspect(pair: PemPair): CertificateFacts {
  const x509 = new X509Certificate(pair.cert);
  if (!x509.checkPrivateKey(createPrivateKey(pair.key))) throw new Error('the private key does not belong to the certificate');
  // Self-issued and signed by its own key. (checkIssued would also demand the keyCertSign usage,
  // which a server certificate rightly lacks.)
  const selfSigned = x509.issuer === x509.subject && x509.verify(x509.publicKey);
  return { fingerprint: pinOf(x509), selfSigned, notAfter: new Date(x509.validTo).toISOString(), names: namesOf(x509), x509 };
}

export class TlsCertificates {
  readonly status: TlsStatus;
  private pair: PemPair | undefined;
  private facts: CertificateFacts | undefined;
  private readonly servers = new Set<TlsServer>();
  private readonly listeners = new Set<(pair: PemPair) => void>();
  private watching = false;
  private reloading: Promise<boolean> | undefined;
  private readonly opts: TlsOptions;
  private acme: AcmeIssuer | undefined;
  private renewalDue: ((certPem: string) => boolean) | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private covering: Promise<boolean> | undefined;

  private constructor(opts: TlsOptions, mode: TlsMode, decision: { enabled: boolean; reason: string }) {
    this.opts = opts;
    this.status = { mode, ...decision, source: null, self_signed: null, fingerprint_sha256: null, not_after: null, names: [] };
  }

  static async open(opts: TlsOptions): Promise<TlsCertificates> {
    const given = Boolean(opts.pem || (opts.certFile && opts.keyFile) || opts.acme);
    const t = new TlsCertificates(opts, opts.mode, decideTls(opts.mode, opts.publicHost, given && opts.mode !== 'off'));
    if (!t.status.enabled) return t;
    if (opts.pem) {
      t.use(opts.pem, 'files');
    } else if (opts.certFile && opts.keyFile) {
      t.use(t.readFiles(), 'files');
    } else if (opts.acme) {
      await t.openAcme(opts.acme);
    } else {
      const made = await loadOrCreateSelfSigned(opts.dataDir, opts.publicHost);
      t.use(made, 'self-signed');
      opts.log.info(`TLS: ${made.created ? 'created' : 'reusing'} a self-signed certificate for ${opts.publicHost} (sha256 ${t.status.fingerprint_sha256})`);
    }
    return t;
  }

  private async openAcme(acmeOpts: AcmeOptions): Promise<void> {
    const log = this.opts.log;
    const { AcmeIssuer, renewalDue } = await import('./acme.ts');
    this.renewalDue = (pem) => renewalDue(pem);
    const issuer = (this.acme = new AcmeIssuer(this.opts.dataDir, acmeOpts, log));
    const stored = issuer.stored();
    if (stored && !renewalDue(stored.cert)) return this.use(stored, 'acme');
    try {
      this.use(await issuer.issue(), 'acme');
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      if (stored) {
        log.warn(`ACME: renewal failed, serving the stored certificate until it succeeds: ${why}`);
        this.use(stored, 'acme');
      } else {
        log.error({ err: why }, 'ACME: no certificate yet; serving a self-signed one until an order succeeds');
        this.status.reason += ` ACME failed (${why}); a self-signed certificate is served until it succeeds.`;
        this.use(await loadOrCreateSelfSigned(this.opts.dataDir, this.opts.publicHost), 'self-signed');
      }
    }
  }

  /**
   * Orders a new ACME certificate when the one in force is due (or not from ACME yet), or always
   * with `force`; swaps it in like a reload. Resolves true when a new certificate is in force.
   */
  async renewAcme(force = false): Promise<boolean> {
    const issuer = this.acme;
    if (!issuer || !this.pair) return false;
    if (!force && this.status.source === 'acme' && !this.renewalDue?.(this.pair.cert)) return false;
    try {
      this.use(await issuer.issue(), 'acme');
      this.status.reason = decideTls(this.status.mode, this.opts.publicHost, true).reason;
      return true;
    } catch (err) {
      this.opts.log.warn(`ACME: renewal failed, will retry: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    }
  }

  get enabled(): boolean {
    return this.status.enabled;
  }

  /** The PEM pair in force (undefined when TLS is off). */
  get current(): PemPair | undefined {
    return this.pair;
  }

  get certificate(): CertificateFacts | undefined {
    return this.facts;
  }

  /** The name clients verify the certificate by: the first of `candidates` it covers, else its first name. */
  verifyName(candidates: string[]): string | undefined {
    if (!this.facts) return undefined;
    for (const c of candidates) if (certificateCovers(this.facts.x509, c)) return c;
    return this.facts.names[0];
  }

  /**
   * A self-signed certificate in force that does not name `host` is replaced by one that does (a
   * node learning its public host from the control plane); the change reaches the attached
   * servers and the listeners like a reload. Resolves true when a new certificate is in force.
   */
  coverHost(host: string): Promise<boolean> {
    if (!this.status.enabled || this.status.source !== 'self-signed' || !this.facts || certificateCovers(this.facts.x509, host)) return Promise.resolve(false);
    // One certificate at a time: a second call while one is made waits for it, then checks again.
    if (this.covering) return this.covering.then(() => this.coverHost(host));
    this.covering = loadOrCreateSelfSigned(this.opts.dataDir, host)
      .then((made) => {
        this.use({ cert: made.cert, key: made.key }, 'self-signed');
        this.opts.log.info(`TLS: ${made.created ? 'created' : 'reusing'} a self-signed certificate for ${host} (sha256 ${this.status.fingerprint_sha256})`);
        return true;
      })
      .finally(() => {
        this.covering = undefined;
      });
    return this.covering;
  }

  /** The server's default context follows every reload. */
  attach(server: TlsServer): void {
    this.servers.add(server);
    server.once('close', () => this.servers.delete(server));
  }

  onChange(listener: (pair: PemPair) => void): void {
    this.listeners.add(listener);
  }

  /** Polls the certificate files (stat follows symlinks, so certbot's live/ links work too), and checks ACME renewal. */
  watch(): void {
    if (this.acme && !this.renewTimer) {
      this.renewTimer = setInterval(() => void this.renewAcme(), this.acme.checkIntervalMs);
      this.renewTimer.unref();
    }
    const { certFile, keyFile } = this.opts;
    if (this.watching || !this.status.enabled || !certFile || !keyFile || this.opts.pem) return;
    this.watching = true;
    const interval = this.opts.watchIntervalMs ?? 2000;
    if (interval === 0) return;
    const changed = () => void this.reload();
    watchFile(certFile, { interval, persistent: false }, changed);
    watchFile(keyFile, { interval, persistent: false }, changed);
  }

  /**
   * Reads the files again and, when they hold a valid pair different from the one in force,
   * swaps it in. A half-written pair (certificate and key not matching yet) is left for the
   * next change. Resolves true when a new certificate is in force.
   */
  reload(): Promise<boolean> {
    if (!this.status.enabled || this.status.source !== 'files' || this.opts.pem) return Promise.resolve(false);
    this.reloading ??= Promise.resolve()
      .then(() => {
        const pair = this.readFiles();
        if (pair.cert === this.pair?.cert && pair.key === this.pair?.key) return false;
        this.use(pair, 'files');
        this.opts.log.info(`TLS: certificate reloaded from ${this.opts.certFile} (sha256 ${this.status.fingerprint_sha256}, until ${this.status.not_after})`);
        return true;
      })
      .catch((err: unknown) => {
        this.opts.log.warn(`TLS: keeping the certificate in force; the files are not usable yet: ${err instanceof Error ? err.message : String(err)}`);
        return false;
      })
      .finally(() => {
        this.reloading = undefined;
      });
    return this.reloading;
  }

  close(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    if (this.watching && this.opts.certFile && this.opts.keyFile) {
      unwatchFile(this.opts.certFile);
      unwatchFile(this.opts.keyFile);
    }
    this.watching = false;
  }

  private readFiles(): PemPair {
    const { certFile, keyFile } = this.opts;
    try {
      return { cert: readFileSync(certFile as string, 'utf8'), key: readFileSync(keyFile as string, 'utf8') };
    } catch (err) {
      throw new Error(`cannot read the TLS certificate or key: ${(err as Error).message}`);
    }
  }

  private use(pair: PemPair, source: TlsSource): void {
    let facts: CertificateFacts;
    try {
      facts = inspect(pair);
    } catch (err) {
      const { certFile, keyFile } = this.opts;
      const files = certFile ? ` in ${certFile} and ${keyFile}` : '';
      const said = (err as Error).message;
      throw new Error(`unusable TLS certificate${files}: ${/no start line/.test(said) ? 'not PEM (no "-----BEGIN" line)' : said}`);
    }
    const first = this.pair === undefined;
    this.pair = pair;
    this.facts = facts;
    Object.assign(this.status, {
      source,
      self_signed: facts.selfSigned,
      fingerprint_sha256: facts.fingerprint,
      not_after: facts.notAfter,
      names: facts.names,
    });
    if (first) return;
    for (const s of this.servers) s.setSecureContext({ cert: pair.cert, key: pair.key });
    for (const l of this.listeners) l(pair);
  }
}
