// TLS fixtures of the tests, all through the real openssl: certificates made by `openssl req`,
// the certificate a port serves read by `openssl s_client`, fingerprints by `openssl x509`.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A self-signed EC certificate for 127.0.0.1 / localhost; returns the two file paths. */
export function makeCert(dir: string, name: string, cn = 'localhost'): { cert: string; key: string; pem: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${cn}`,
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-days', '2', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  return { cert, key, pem: readFileSync(cert, 'utf8') };
}

/** Replaces the pair the way certbot/acme.sh deploy does: written aside, then renamed into place. */
export function installCert(from: { cert: string; key: string }, to: { cert: string; key: string }): void {
  writeFileSync(`${to.key}.new`, readFileSync(from.key), { mode: 0o600 });
  writeFileSync(`${to.cert}.new`, readFileSync(from.cert));
  renameSync(`${to.key}.new`, to.key);
  renameSync(`${to.cert}.new`, to.cert);
}

function run(cmd: string, args: string[], input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = execFile(cmd, args, { timeout: 10_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve(stdout));
    p.stdin?.end(input);
  });
}

/** The PEM of the certificate a TLS port serves (openssl s_client). */
export async function servedCertificate(port: number, servername = '127.0.0.1', host = '127.0.0.1'): Promise<string> {
  const out = await run('openssl', ['s_client', '-connect', `${host}:${port}`, '-servername', servername], '');
  const m = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(out);
  if (!m) throw new Error(`no certificate from port ${port}: ${out.slice(0, 500)}`);
  return m[0] + '\n';
}

/** `openssl x509 -fingerprint -sha256` of a PEM, colons removed (as a link's pcs writes it, case aside). */
export async function opensslPin(pem: string): Promise<string> {
  const out = await run('openssl', ['x509', '-noout', '-fingerprint', '-sha256'], pem);
  const m = /Fingerprint=([0-9A-F:]+)/i.exec(out);
  if (!m) throw new Error(`no fingerprint in: ${out}`);
  return m[1].replaceAll(':', '');
}
