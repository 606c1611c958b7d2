// `vpn-access doctor`: what makes clients fail before they connect, checked on the configuration
// serve would use (the same options and environment) and, when it runs, on the service itself
// (found at the API port, or named with --url and --token). Exit status 1 when a check fails.
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { TlsFacts } from '../doctor/certificate.ts';
import { postgresProbe, sqliteProbe } from '../doctor/probes.ts';
import { databaseClock } from '../doctor/store.ts';
import { type Check, type DoctorReport, formatReport, messageOf, pass, fail as failed, warn } from '../doctor/report.ts';
import { runDoctor } from '../doctor/run.ts';
import { createLogger } from '../log.ts';
import { pinOf } from '../tls/certificates.ts';
import { decideTls } from '../tls/mode.ts';
import { selfSignedPaths } from '../tls/self-signed.ts';
import { askServer, askServerChecks, cliPorts, type ServerAnswer, serverFacts } from './doctor-server.ts';
import { dataPlaneOptions, publicHostAndReach, SERVE_OPTIONS, type ServeValues, tlsOptions } from './serve.ts';
import { databaseUrl, defaultDataDir, env, fail, redactUrl } from './shared.ts';

const DOCTOR_OPTIONS = {
  ...SERVE_OPTIONS,
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** The certificate serve would use: the given files, the data folder's ACME or self-signed one. */
function configuredTls(values: ServeValues, dataDir: string, publicHost: string): TlsFacts {
  const t = tlsOptions(values);
  const decision = decideTls(t.tlsMode, publicHost, Boolean(t.certFile || t.acme));
  const facts: TlsFacts = { enabled: decision.enabled, mode: t.tlsMode, reason: decision.reason, source: null, pin: null, fingerprint: null };
  if (!decision.enabled) return facts;
  facts.source = t.certFile ? 'files' : t.acme ? 'acme' : 'self-signed';
  // The ACME issuer keeps its certificate at acme/cert.pem of the data folder (tls/acme.ts acmePaths).
  const file = t.certFile ? resolve(t.certFile) : t.acme ? join(dataDir, 'acme', 'cert.pem') : selfSignedPaths(dataDir).cert;
  if (!t.certFile && !existsSync(file)) return facts; // made at the first start
  try {
    const cert = new X509Certificate(readFileSync(file));
    const selfSigned = cert.issuer === cert.subject && cert.verify(cert.publicKey);
    return { ...facts, cert, fingerprint: pinOf(cert), pin: selfSigned ? pinOf(cert) : null };
  } catch (err) {
    return { ...facts, error: `${file}: ${messageOf(err)}` };
  }
}

/** "PostgreSQL at host:port", as the clock check names it. */
function postgresNamed(url: string): string {
  const { hostname, port } = new URL(url);
  return `PostgreSQL at ${hostname || 'its socket'}:${port || 5432}`;
}

/** The first check: which service was inspected, and whether it answers. */
function serviceCheck(answer: ServerAnswer | null, asked: string, named: boolean): Check {
  const title = 'Service';
  if (answer?.ok) return pass('service', title, `answers at ${asked}${answer.version ? ` (version ${answer.version})` : ''}`);
  if (!named) return pass('service', title, `not running at ${asked}: the configuration is checked as serve would use it`);
  return failed('service', title, `no answer from ${asked}: ${answer?.error ?? 'unknown error'}`,
    'check --url (the API origin, such as https://HOST:8787) and --token (an API token of the service), and that serve runs');
}

export async function doctor(argv: string[], usage: string): Promise<void> {
  const { values } = parseArgs({ args: argv, options: DOCTOR_OPTIONS });
  if (values.help) {
    process.stdout.write(usage);
    return;
  }
  if (values.url && !values.token) fail('--url goes with --token (an API token of that service)');
  const host = values.host ?? env.VPN_ACCESS_HOST ?? '127.0.0.1';
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const database = databaseUrl(values.database ?? env.VPN_ACCESS_DATABASE);
  const quiet = createLogger({ level: 'silent' });
  const { publicHost: configuredHost } = publicHostAndReach(values, host, tlsOptions(values), quiet);
  const configured = configuredTls(values, dataDir, configuredHost);
  const ports = cliPorts(values, configured.enabled);
  const { answer, asked } = await askServer(values, host, ports, configured.enabled);
  const running = Boolean(answer?.ok);
  const facts = answer?.ok && answer.info ? serverFacts(answer.info, ports) : { publicHost: configuredHost, ports, tls: configured };
  const base = {
    ...facts,
    bindHost: host,
    running,
    clock: answer?.ok && answer.date !== undefined ? { date: answer.date, sentAt: answer.sentAt, receivedAt: answer.receivedAt, from: asked } : null,
    leading: [serviceCheck(answer, asked, Boolean(values.url))],
  };
  // A service named with --url knows its own setup: its checks of it, when the token may read them.
  const served = values.url && running ? await askServerChecks(asked, values.token!) : null;
  if (served && 'checks' in served) {
    return print(await runDoctor({ ...base, serverChecks: served.checks }), Boolean(values.json));
  }
  if (served) base.leading.push(serverChecksUnread(asked, served.error));
  const probe = database ? await postgresProbe(database, redactUrl(database)) : sqliteProbe(dataDir);
  try {
    // The server asked without --url runs on this machine (one clock): a cluster's database is the
    // other clock worth comparing with then. A server named with --url comes first.
    const databaseTime = database ? await databaseClock(probe, postgresNamed(database)) : null;
    const result = await runDoctor({
      ...base,
      clock: values.url ? (base.clock ?? databaseTime) : (databaseTime ?? base.clock),
      egress: dataPlaneOptions(values).egress,
      database: probe,
      zonesFile: values.zones ?? env.VPN_ACCESS_ZONES,
      interfaces: networkInterfaces(),
    });
    print(result, Boolean(values.json));
  } finally {
    await probe.close().catch(() => {});
  }
}

/** The service named with --url did not give its own checks: those made here are of this machine. */
function serverChecksUnread(asked: string, error: string): Check {
  return warn('server-checks', 'Server\'s own checks', `not read from ${asked}/v2/doctor (${error}): the public host, egress, database, zones and cluster below are this machine's configuration, which may not be the server's`,
    'use an owner token of the service (GET /v2/doctor is for owners), or run doctor on the server\'s machine with serve\'s options');
}

function print(result: DoctorReport, json: boolean): void {
  process.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : formatReport(result));
  process.exitCode = result.summary.fail > 0 ? 1 : 0;
}
