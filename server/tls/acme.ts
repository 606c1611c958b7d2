// Certificates from an ACME CA (Let's Encrypt by default) for `--acme-domain`, through the
// acme-client library and the http-01 challenge: while an order is open, a small HTTP listener
// on the challenge port (80 unless told) answers /.well-known/acme-challenge/<token>. The account
// key and the certificate are kept in DATA_DIR/acme/ (0600); a certificate is renewed once less
// than a third of its lifetime is left (30 days of Let's Encrypt's 90). Once a certificate is
// stored, the order's authorizations are deactivated: a CA may otherwise reuse a valid one for
// weeks, so a leaked account key could issue for the name without proving control, and a
// renewal would not show that the challenge still works.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { Agent } from 'node:https';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import * as acme from 'acme-client';
import type { Logger } from '../domain.ts';
import { certificateCovers, writePrivate, type PemPair } from './self-signed.ts';

export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

export interface AcmeOptions {
  domain: string;
  email: string;
  /** ACME directory URL; default Let's Encrypt's production directory. */
  directoryUrl?: string;
  /** PEM of the CA that signed the directory's own HTTPS certificate, for a private ACME server. */
  directoryCa?: string;
  /** Port of the http-01 challenge listener (where the CA connects); default 80. */
  httpPort?: number;
  /** Bind address of the challenge listener; default all addresses. */
  httpHost?: string;
  /** How often renewal is considered; default 12 hours. */
  checkIntervalMs?: number;
}

export function acmePaths(dataDir: string): { dir: string; account: string; cert: string; key: string } {
  const dir = join(dataDir, 'acme');
  return { dir, account: join(dir, 'account-key.pem'), cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
}

/** True once less than a third of the certificate's lifetime is left (or it does not parse). */
export function renewalDue(certPem: string, now = Date.now()): boolean {
  try {
    const c = new X509Certificate(certPem);
    const from = Date.parse(c.validFrom);
    const to = Date.parse(c.validTo);
    return to - now < (to - from) / 3;
  } catch {
    return true;
  }
}

export class AcmeIssuer {
  private readonly paths: ReturnType<typeof acmePaths>;
  private readonly opts: AcmeOptions;
  private readonly log: Logger;
  private ordering: Promise<PemPair> | undefined;

  constructor(dataDir: string, opts: AcmeOptions, log: Logger) {
    this.paths = acmePaths(dataDir);
    this.opts = opts;
    this.log = log;
  }

  get checkIntervalMs(): number {
    return this.opts.checkIntervalMs ?? 12 * 3_600_000;
  }

  /** The stored certificate, when it matches its key and names the domain. */
  stored(): PemPair | undefined {
    const { cert, key } = this.paths;
    if (!existsSync(cert) || !existsSync(key)) return undefined;
    try {
      const pair = { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
      const x = new X509Certificate(pair.cert);
      if (!x.checkPrivateKey(createPrivateKey(pair.key)) || !certificateCovers(x, this.opts.domain)) return undefined;
      return pair;
    } catch {
      return undefined;
    }
  }

  /** Orders a new certificate (one order at a time) and stores it. */
  issue(): Promise<PemPair> {
    this.ordering ??= this.order().finally(() => {
      this.ordering = undefined;
    });
    return this.ordering;
  }

  private async accountKey(): Promise<string> {
    if (existsSync(this.paths.account)) return readFileSync(this.paths.account, 'utf8');
    const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
    writePrivate(this.paths.account, key);
    return key;
  }

  private async order(): Promise<PemPair> {
    mkdirSync(this.paths.dir, { recursive: true, mode: 0o700 });
    if (this.opts.directoryCa) {
      // acme-client talks through its own axios instance: trust the private directory's CA too.
      acme.axios.defaults.httpsAgent = new Agent({ ca: [...rootCertificates, this.opts.directoryCa] });
    }
    const client = new acme.Client({ directoryUrl: this.opts.directoryUrl ?? LETS_ENCRYPT_DIRECTORY, accountKey: await this.accountKey() });
    const [key, csr] = await acme.crypto.createCsr({ commonName: this.opts.domain, altNames: [this.opts.domain] }, await acme.crypto.createPrivateEcdsaKey('P-256'));
    const answers = new Map<string, string>();
    const used: acme.Authorization[] = [];
    const listener = await this.challengeListener(answers);
    try {
      const cert = await client.auto({
        csr,
        email: this.opts.email,
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // The CA validates for real; a local pre-check would need this host to resolve its own name.
        skipChallengeVerification: true,
        challengeCreateFn: async (authz, challenge, keyAuthorization) => {
          used.push(authz);
          answers.set(challenge.token, keyAuthorization);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          answers.delete(challenge.token);
        },
      });
      const pair = { cert, key: key.toString() };
      writePrivate(this.paths.key, pair.key);
      writePrivate(this.paths.cert, pair.cert);
      this.log.info(`ACME: certificate issued for ${this.opts.domain}`);
      await this.deactivate(client, used);
      return pair;
    } finally {
      await new Promise<void>((r) => listener.close(() => r()));
    }
  }

  /** A failed deactivation costs nothing but the reuse window, so it is only logged. */
  private async deactivate(client: acme.Client, used: acme.Authorization[]): Promise<void> {
    for (const authz of used) {
      try {
        await client.deactivateAuthorization(authz);
      } catch (err) {
        this.log.warn(`ACME: could not deactivate the authorization for ${authz.identifier.value}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  private challengeListener(answers: Map<string, string>): Promise<Server> {
    const server = createServer((req, res) => {
      const m = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]+)$/.exec((req.url ?? '').split('?')[0]);
      const answer = m ? answers.get(m[1]) : undefined;
      res.statusCode = answer ? 200 : 404;
      res.setHeader('content-type', 'text/plain');
      res.end(answer ?? 'not found');
    });
    return new Promise((resolve, reject) => {
      server.once('error', (err) => reject(new Error(`ACME: cannot listen on the http-01 port ${this.opts.httpPort ?? 80}: ${err.message}`)));
      server.listen(this.opts.httpPort ?? 80, this.opts.httpHost, () => resolve(server));
    });
  }
}
