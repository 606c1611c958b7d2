// `vpn-access serve`: the service headless (API, VLESS over ws and tcp, the proxy, the web UI),
// on a data folder (SQLite) or with `--database URL` on PostgreSQL. serve.ts (and through it
// fastify and the data plane) is imported only when it runs, so the other commands start fast.
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { choosePublicHost, clearTextReach, isWildcardHost } from '../public-host.ts';
import { DatabaseUnwritable, unwritable } from '../store/sql/unwritable.ts';
import { decideTls, parseTlsMode } from '../tls/mode.ts';
import { databaseUrl, defaultDataDir, egressAddressList, env, fail, HOST, logFormat, port, redactUrl, tokenCreateCommand } from './shared.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function parseRate(value: string): { max: number; windowMs: number } {
  const m = /^(\d+)\/(\d+)$/.exec(value);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) fail(`--rate-limit takes REQUESTS/SECONDS, such as 600/60, not "${value}"`);
  return { max: Number(m[1]), windowMs: Number(m[2]) * 1000 };
}

function parseHttpTimeouts(value: string): { headersMs: number; requestMs: number; keepAliveMs: number; idleMs: number } {
  const parts = value.split('/').map(Number);
  if (parts.length !== 4 || parts.some((n) => !Number.isInteger(n) || n < 1)) {
    fail(`--http-timeouts takes HEADERS/REQUEST/KEEPALIVE/IDLE in whole seconds, such as 10/30/65/120, not "${value}"`);
  }
  const [headers, request, keepAlive, idle] = parts;
  if (headers > request) fail(`--http-timeouts: the headers timeout (${headers} s) cannot exceed the request timeout (${request} s)`);
  return { headersMs: headers * 1000, requestMs: request * 1000, keepAliveMs: keepAlive * 1000, idleMs: idle * 1000 };
}

const PROXY_PRESETS = ['loopback', 'linklocal', 'uniquelocal'];

/** --trust-proxy: comma-separated addresses, CIDRs (ADDR/BITS) and presets; '' is none. */
function parseTrustProxy(value: string): string[] {
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) {
    const [addr, bits, extra] = item.split('/');
    const family = isIP(addr);
    const width = family === 4 ? 32 : 128;
    const ok = PROXY_PRESETS.includes(item) || (family !== 0 && extra === undefined && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= width)));
    if (!ok) fail(`--trust-proxy takes a comma-separated list of proxy addresses, CIDRs (such as 10.0.0.0/8) or ${PROXY_PRESETS.join(', ')}; not "${item}"`);
  }
  return items;
}

/** --read-cache on|off (PostgreSQL only; SQLite always answers those reads from memory). */
function parseReadCache(text: string | undefined, database: string | undefined): boolean {
  if (text === undefined) return true; // on PostgreSQL; SQLite has no use for it
  if (text !== 'on' && text !== 'off') fail(`--read-cache takes on or off, not "${text}"`);
  if (!database) fail('--read-cache applies to --database (PostgreSQL); on SQLite those reads always come from memory');
  return text === 'on';
}

export const SERVE_OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  database: { type: 'string' },
  'read-cache': { type: 'string' },
  zones: { type: 'string' },
  'rate-limit': { type: 'string' },
  'public-host': { type: 'string' },
  'vless-tcp-port': { type: 'string' },
  'proxy-port': { type: 'string' },
  'link-network': { type: 'string' },
  tls: { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-watch-interval': { type: 'string' },
  'acme-domain': { type: 'string' },
  'acme-email': { type: 'string' },
  'acme-directory': { type: 'string' },
  'acme-directory-ca': { type: 'string' },
  'acme-http-port': { type: 'string' },
  'tls-key': { type: 'string' },
  egress: { type: 'string' },
  'egress-address': { type: 'string' },
  'http-timeouts': { type: 'string' },
  'idle-timeout': { type: 'string' },
  'metrics-token': { type: 'string' },
  'trust-proxy': { type: 'string' },
  'no-ui': { type: 'boolean' },
  quiet: { type: 'boolean' },
  'log-format': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type ServeValues = ReturnType<typeof parseArgs<{ args: string[]; options: typeof SERVE_OPTIONS }>>['values'];
type Logger = ReturnType<typeof createLogger>;

/** The certificate options: the mode, given files, their watch interval, or ACME. */
export function tlsOptions(values: ServeValues) {
  const certFile = values['tls-cert'] ?? env.VPN_ACCESS_TLS_CERT;
  const keyFile = values['tls-key'] ?? env.VPN_ACCESS_TLS_KEY;
  if (Boolean(certFile) !== Boolean(keyFile)) fail('--tls-cert and --tls-key go together');
  const tlsText = values.tls ?? env.VPN_ACCESS_TLS;
  const tlsMode = parseTlsMode(tlsText) ?? (tlsText ? fail(`--tls takes auto, on or off, not "${tlsText}"`) : 'auto');
  if (tlsMode === 'off' && certFile) fail('--tls off cannot be combined with --tls-cert/--tls-key');
  const watchText = values['tls-watch-interval'] ?? env.VPN_ACCESS_TLS_WATCH_INTERVAL;
  const watchMs = watchText === undefined || watchText === '' ? undefined : Number(watchText);
  if (watchMs !== undefined && (!Number.isInteger(watchMs) || watchMs < 0)) fail(`--tls-watch-interval takes milliseconds (0 or more), not "${watchText}"`);
  const acmeDomain = values['acme-domain'] ?? env.VPN_ACCESS_ACME_DOMAIN;
  const acmeEmail = values['acme-email'] ?? env.VPN_ACCESS_ACME_EMAIL;
  if (Boolean(acmeDomain) !== Boolean(acmeEmail)) fail('--acme-domain and --acme-email go together');
  if (acmeDomain && certFile) fail('use either --tls-cert/--tls-key or --acme-domain, not both');
  if (acmeDomain && tlsMode === 'off') fail('--tls off cannot be combined with --acme-domain');
  const acmeCaFile = values['acme-directory-ca'] ?? env.VPN_ACCESS_ACME_DIRECTORY_CA;
  const acme = acmeDomain && acmeEmail
    ? {
        domain: acmeDomain,
        email: acmeEmail,
        directoryUrl: values['acme-directory'] ?? env.VPN_ACCESS_ACME_DIRECTORY,
        directoryCa: acmeCaFile ? readFileSync(acmeCaFile, 'utf8') : undefined,
        httpPort: port(values['acme-http-port'] ?? env.VPN_ACCESS_ACME_HTTP_PORT, 80, '--acme-http-port') ?? 80,
      }
    : undefined;
  return { certFile, keyFile, tlsMode, watchMs, acmeDomain, acme };
}

/** The egress policy, idle time-out and link network. */
export function dataPlaneOptions(values: ServeValues) {
  const egress = values.egress ?? env.VPN_ACCESS_EGRESS ?? 'public-only';
  if (egress !== 'public-only' && egress !== 'lan' && egress !== 'allow-all') fail('--egress takes public-only, lan or allow-all');
  const idleText = values['idle-timeout'] ?? env.VPN_ACCESS_IDLE_TIMEOUT;
  const idleSeconds = idleText === undefined || idleText === '' ? undefined : Number(idleText);
  if (idleSeconds !== undefined && (!Number.isInteger(idleSeconds) || idleSeconds < 1 || idleSeconds > 86_400)) fail(`--idle-timeout takes whole seconds from 1 to 86400, not "${idleText}"`);
  const linkNetwork = values['link-network'] ?? env.VPN_ACCESS_LINK_NETWORK ?? 'ws';
  if (linkNetwork !== 'ws' && linkNetwork !== 'tcp') fail('--link-network takes ws or tcp');
  return { egress: egress as 'public-only' | 'lan' | 'allow-all', idleSeconds, linkNetwork: linkNetwork as 'ws' | 'tcp' };
}

/**
 * What links name: given, the ACME domain, the bind host, or for a wildcard bind the first
 * address other machines can use (0.0.0.0 in a link means nothing to a client); and how far clear
 * text would reach (TLS off, by --tls off or by auto for a local public host), never beyond the local network.
 */
export function publicHostAndReach(values: ServeValues, host: string, tls: ReturnType<typeof tlsOptions>, log: Logger) {
  const interfaces = networkInterfaces();
  const givenPublicHost = values['public-host'] ?? env.VPN_ACCESS_PUBLIC_HOST ?? tls.acmeDomain;
  if (givenPublicHost !== undefined && !HOST.test(givenPublicHost)) {
    fail(`--public-host takes the host name or address clients connect to (such as vpn.example.com or 203.0.113.7), not "${givenPublicHost}"`);
  }
  const publicHost = givenPublicHost ?? choosePublicHost(host, interfaces) ??
    fail(`--host ${host}: no network interface has an address other machines can use (only loopback or link-local); name the host clients should connect to with --public-host`);
  if (!givenPublicHost && isWildcardHost(host)) log.info(`public host: ${publicHost} (the first non-internal interface address; --public-host changes it)`);
  const tlsDecision = decideTls(tls.tlsMode, publicHost, Boolean(tls.certFile || tls.acme));
  const reach = tlsDecision.enabled ? null : clearTextReach(host, publicHost, interfaces);
  if (reach === 'internet') {
    fail(`refusing to serve without TLS beyond the local network (--host ${host}, public host ${publicHost}): API tokens, session ids ` +
      '(the VLESS credentials) and traffic would cross the internet in clear text. Use --tls on (or auto with a public --public-host), ' +
      'or bind a local address; behind a proxy that terminates TLS, bind to 127.0.0.1 and let the proxy connect there.');
  }
  return { publicHost, reach };
}

export async function serve(argv: string[], usage: string): Promise<void> {
  const { values } = parseArgs({ args: argv, options: SERVE_OPTIONS });
  if (values.help) {
    process.stdout.write(usage);
    return;
  }
  const host = values.host ?? env.VPN_ACCESS_HOST ?? '127.0.0.1';
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const database = databaseUrl(values.database ?? env.VPN_ACCESS_DATABASE);
  const readCache = parseReadCache(values['read-cache'] ?? env.VPN_ACCESS_READ_CACHE, database);
  const tls = tlsOptions(values);
  const { egress, idleSeconds, linkNetwork } = dataPlaneOptions(values);
  const rendererDir = join(ROOT, 'dist', 'renderer');
  const format = logFormat(values['log-format'] ?? env.VPN_ACCESS_LOG_FORMAT);
  const log = createLogger({ format });
  const { publicHost, reach } = publicHostAndReach(values, host, tls, log);
  const rateText = values['rate-limit'] ?? env.VPN_ACCESS_RATE_LIMIT;
  const timeoutsText = values['http-timeouts'] ?? env.VPN_ACCESS_HTTP_TIMEOUTS;

  const { startServer } = await import('../serve.ts');
  const server = await startServer({
    host,
    port: port(values.port ?? env.VPN_ACCESS_PORT, 8787, '--port') ?? 8787,
    dataDir,
    database,
    readCache,
    zonesFile: values.zones ?? env.VPN_ACCESS_ZONES,
    rateLimit: rateText ? parseRate(rateText) : undefined,
    metricsToken: values['metrics-token'] ?? env.VPN_ACCESS_METRICS_TOKEN ?? undefined,
    trustProxy: parseTrustProxy(values['trust-proxy'] ?? env.VPN_ACCESS_TRUST_PROXY ?? ''),
    httpTimeouts: timeoutsText ? parseHttpTimeouts(timeoutsText) : undefined,
    publicHost,
    vlessTcpPort: port(values['vless-tcp-port'] ?? env.VPN_ACCESS_VLESS_TCP_PORT, 8789, '--vless-tcp-port'),
    proxyPort: port(values['proxy-port'] ?? env.VPN_ACCESS_PROXY_PORT, 8788, '--proxy-port'),
    linkNetwork,
    tlsMode: tls.tlsMode,
    tlsCertFile: tls.certFile ? resolve(tls.certFile) : undefined,
    tlsKeyFile: tls.keyFile ? resolve(tls.keyFile) : undefined,
    tlsWatchIntervalMs: tls.watchMs,
    acme: tls.acme,
    egress,
    egressAddresses: egressAddressList(values['egress-address'] ?? env.VPN_ACCESS_EGRESS_ADDRESS),
    connectionLimits: idleSeconds === undefined ? undefined : { idleTimeoutMs: idleSeconds * 1000 },
    logger: log,
    logRequests: !values.quiet,
    rendererDir: values['no-ui'] ? undefined : rendererDir,
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EDATALOCKED') fail(err.message);
    if (err.code === 'EADDRINUSE') fail(`a port is already in use (${err.message}); choose another with --port, --vless-tcp-port or --proxy-port`);
    const folder = database ? undefined : dataFolderFailure(err, dataDir);
    if (folder) fail(folder);
    // PostgreSQL unreachable, or refusing writes (a standby): which database, and why.
    if (database && err.code === 'service_unavailable') fail(`cannot use the database at ${redactUrl(database)}: ${err.message}`);
    throw err;
  });

  // Signals are handled before anything is printed: whoever waits for the 'listening' line may
  // stop the server the moment it reads it, and must get a clean shutdown.
  stopOnSignals(server, log);
  const where = database ? { database } : { dataDir };
  // JSON logs: stdout holds only JSON lines (a log shipper reads it), so the token shown once goes to stderr.
  if (server.ownerToken) (format === 'json' ? process.stderr : process.stdout).write(firstTokenText(server.ownerToken, server.origin, !values['no-ui'], where));
  announce(server, log, { host, where, reach, ui: !values['no-ui'] && existsSync(join(rendererDir, 'index.html')) });
  // certbot and acme.sh deploy hooks send SIGHUP: re-read the certificate files now.
  process.on('SIGHUP', () => void server.services.tls.reload());
}

type Started = Awaited<ReturnType<typeof import('../serve.ts').startServer>>;

/** A start that failed on the data folder itself, said in words (undefined: another failure). */
function dataFolderFailure(err: NodeJS.ErrnoException, dataDir: string): string | undefined {
  const inFolder = typeof err.path === 'string' && (err.path === dataDir || err.path.startsWith(`${dataDir}/`) || dataDir.startsWith(`${err.path}/`));
  if (inFolder && (err.code === 'EEXIST' || err.code === 'ENOTDIR')) return `--data-dir ${dataDir}: not a folder (${err.message}); name a folder, or one to be made`;
  if (inFolder && (err.code === 'EACCES' || err.code === 'EPERM' || err.code === 'EROFS')) return `--data-dir ${dataDir}: cannot be written (${err.message}); give this user a folder it may write`;
  const refused = unwritable(err);
  if (err.code === 'ENOSPC' || (refused instanceof DatabaseUnwritable && refused.details.reason === 'disk_full')) return `the data folder ${dataDir}: the disk is full (${err.message}); free space there, then start again`;
  return undefined;
}

/** How long a clean stop may take before the process exits anyway (its counts are in the journal or the database by then). */
const STOP_DEADLINE_MS = 15_000;

/** SIGINT and SIGTERM close the server once, then exit (1 when closing failed or outlived STOP_DEADLINE_MS). */
function stopOnSignals(server: Started, log: Logger): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: shutting down`);
    setTimeout(() => {
      log.error(`shutdown did not finish within ${STOP_DEADLINE_MS / 1000} s; exiting`);
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: String(err) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

/** The log lines of a started server: TLS, where it listens, the web UI, and warnings on its reach. */
function announce(server: Started, log: Logger, at: { host: string; where: { dataDir?: string; database?: string }; reach: string | null; ui: boolean }): void {
  const { host, where, reach } = at;
  const tls = server.services.settings.tls;
  log.info(`TLS ${tls.enabled ? `on (${tls.source}, sha256 ${tls.fingerprint_sha256})` : 'off'}: ${tls.reason}`);
  log.info(`listening: API ${server.baseUrl}, VLESS ws ${server.origin.replace(/^http/, 'ws')}${server.services.settings.link.wsPath}` +
    `, VLESS tcp ${server.vlessTcpPort ?? 'off'}, proxy ${server.proxyPort ?? 'off'}, data ${where.database ? `PostgreSQL ${redactUrl(where.database)}` : where.dataDir}`);
  if (at.ui) {
    log.info(`web UI: ${server.origin}/`);
    if (!server.ownerToken) log.info(`sign in to the web UI with an API token; to make one: ${tokenCreateCommand(where)}`);
  }
  if (reach === 'local') {
    log.warn(`WARNING: no TLS and bound to ${host}: API tokens, session ids (the VLESS credentials) and traffic cross the local network in clear text; --tls on encrypts them`);
  } else if (host !== '127.0.0.1' && host !== '::1' && host !== 'localhost') log.warn(`bound to ${host}: reachable from other machines`);
}

/**
 * What a first start prints on standard output (never to the log): the owner token it created,
 * a ready web-UI address signing in with it (the UI takes a token from `/#token=...`; the
 * fragment never reaches the server), and the complete command that makes another.
 */
function firstTokenText(token: string, origin: string, ui: boolean, where: { dataDir?: string; database?: string }): string {
  return `\nNew ${where.database ? 'database' : 'data folder'}: created customer "default" and its owner token (shown only this once, keep it secret):\n\n  ${token}\n\n` +
    (ui ? `Open the web UI signed in: ${origin}/#token=${encodeURIComponent(token)}\n` : '') +
    `Lost it? Make another: ${tokenCreateCommand(where)}\n\n`;
}
