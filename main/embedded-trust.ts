// The app's own API client trusts its embedded server's certificate. The embedded server turns
// TLS on by itself (a self-signed certificate) when "Let other devices connect" binds it to an
// address that is not loopback, private or link-local; main then talks to it at that address,
// and its fetch and event streams must accept that one certificate without trusting anything
// else: it is added to the process's default CA list (tls.setDefaultCACertificates), beside the
// system's roots, and replaced whenever the server's certificate changes.
import tls from 'node:tls';
import type { RunningServer } from '../server/serve.ts';

let systemRoots: string[] | undefined;

/** Trusts exactly `pem` besides the system roots (undefined: the system roots alone). */
export function trustOnly(pem: string | undefined): void {
  // Node 22.19 / 24.5 and later; on an older runtime a shared server with TLS stays unreachable
  // from this window (the error screen says so) rather than trusting more than that certificate.
  if (typeof tls.setDefaultCACertificates !== 'function') return;
  systemRoots ??= tls.getCACertificates('default');
  tls.setDefaultCACertificates(pem ? [...systemRoots, pem] : systemRoots);
}

/** Trusts the running embedded server's certificate, now and after every reload. */
export function trustEmbeddedServer(server: RunningServer): void {
  const certificates = server.services.tls;
  trustOnly(certificates.enabled ? certificates.current?.cert : undefined);
  certificates.onChange((pair) => trustOnly(pair.cert));
}
