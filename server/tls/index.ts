// The TLS seam of the server: opens the certificate for buildServer, writes what links need into
// the shared LinkSettings (and again after every reload), and hooks the listeners to reloads.
import type { FastifyInstance } from 'fastify';
import type { Server as TlsServer } from 'node:tls';
import type { DataPlane } from '../dataplane/api.ts';
import type { Logger } from '../domain.ts';
import type { LinkSettings } from '../links.ts';
import type { AcmeOptions } from './acme.ts';
import { TlsCertificates } from './certificates.ts';
import type { TlsMode } from './mode.ts';

export { TlsCertificates, type TlsStatus } from './certificates.ts';
export type { AcmeOptions } from './acme.ts';
export { decideTls, isLocalHost, parseTlsMode, type TlsMode } from './mode.ts';

/** What clients imitate and offer: a common browser fingerprint, and HTTP/1.1 (what the ws upgrade speaks). */
export const LINK_FP = 'chrome';
export const LINK_ALPN = ['http/1.1'];

export interface ServerTlsOptions {
  tlsMode?: TlsMode;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  tlsWatchIntervalMs?: number;
  tls?: { cert: string; key: string };
  /** Certificates from an ACME CA (after files and PEM, before the self-signed fallback). */
  acme?: AcmeOptions;
}

export function openTls(opts: ServerTlsOptions & { dataDir: string; publicHost: string; log: Logger }): Promise<TlsCertificates> {
  return TlsCertificates.open({
    mode: opts.tlsMode ?? 'auto',
    publicHost: opts.publicHost,
    dataDir: opts.dataDir,
    certFile: opts.tlsCertFile,
    keyFile: opts.tlsKeyFile,
    pem: opts.tls,
    acme: opts.acme,
    watchIntervalMs: opts.tlsWatchIntervalMs,
    log: opts.log,
  });
}

/** The TLS fields of links: security, fingerprint, ALPN, the pin of a self-signed certificate, the name to verify. */
export function applyTlsToLink(link: LinkSettings, tls: TlsCertificates): void {
  link.tls = tls.enabled;
  const cert = tls.certificate;
  if (!tls.enabled || !cert) {
    link.fp = link.alpn = link.pcs = link.vcn = undefined;
    return;
  }
  link.fp = LINK_FP;
  link.alpn = LINK_ALPN;
  // A CA-signed certificate is verified the usual way; a self-signed one only by its pin.
  link.pcs = cert.selfSigned ? cert.fingerprint : undefined;
  const sni = link.sni ?? link.publicHost;
  link.vcn = tls.verifyName([sni, link.publicHost]);
}

/** After buildServer made the listeners: reloads reach the API server, the data plane and the links. */
export function wireTls(tls: TlsCertificates, app: FastifyInstance, dataPlane: DataPlane | null, link: LinkSettings): void {
  if (!tls.enabled) return;
  tls.attach(app.server as unknown as TlsServer);
  tls.onChange((pair) => {
    dataPlane?.updateTls?.(pair);
    applyTlsToLink(link, tls);
  });
  tls.watch();
  app.addHook('onClose', async () => tls.close());
}
