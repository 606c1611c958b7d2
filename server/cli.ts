// The `vpn-access` command line: `serve` runs the service headless; `token` issues,
// lists and revokes API tokens in a data folder.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openDatabase } from './store/db.ts';
import { type Role, Store } from './store/store.ts';
import { createLogger } from './log.ts';
// serve.ts (and through it fastify and the data plane) is imported only by `serve`, below:
// `token` commands and `help` then start without loading them.
import { parseTlsMode } from './tls/mode.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;

const USAGE = `vpn-access: the VPN access service

Usage:
  vpn-access serve [options]
  vpn-access token create --customer NAME --role owner|agent [--data-dir DIR]
  vpn-access token list [--data-dir DIR]
  vpn-access token revoke TOKEN_ID|TOKEN_PREFIX|TOKEN [--data-dir DIR]

serve options (environment variable in brackets):
  --host HOST            bind address, default 127.0.0.1 (loopback)      [VPN_ACCESS_HOST]
  --port PORT            API port (also VLESS over ws), default 8787      [VPN_ACCESS_PORT]
  --data-dir DIR         data folder, default ~/.local/share/vpn-access   [VPN_ACCESS_DATA_DIR]
  --zones FILE           zone catalogue JSON, default the built-in one    [VPN_ACCESS_ZONES]
  --rate-limit N/S       requests per token per window, default 600/60    [VPN_ACCESS_RATE_LIMIT]
  --public-host HOST     host written into session configurations         [VPN_ACCESS_PUBLIC_HOST]
  --vless-tcp-port PORT  raw TCP VLESS port, default 8789, "off" disables  [VPN_ACCESS_VLESS_TCP_PORT]
  --proxy-port PORT      HTTP proxy port, default 8788, "off" disables    [VPN_ACCESS_PROXY_PORT]
  --link-network ws|tcp  transport of the configurations handed out       [VPN_ACCESS_LINK_NETWORK]
  --tls auto|on|off      TLS on the API port, VLESS and the proxy; auto (default) turns it on
                         when the public host is not loopback, private or link-local  [VPN_ACCESS_TLS]
  --tls-cert FILE --tls-key FILE   PEM certificate and key, reloaded when the files change or on
                         SIGHUP; without them a self-signed certificate is made and kept in the
                         data folder (links then pin it with pcs)  [VPN_ACCESS_TLS_CERT/_KEY]
  --tls-watch-interval MS   how often the certificate files are checked, default 2000;
                         0: only on SIGHUP                              [VPN_ACCESS_TLS_WATCH_INTERVAL]
  --acme-domain D --acme-email E   certificate from an ACME CA (http-01 on port 80), kept in the
                         data folder and renewed with a third of its life left  [VPN_ACCESS_ACME_DOMAIN/_EMAIL]
  --acme-directory URL   ACME directory, default Let's Encrypt          [VPN_ACCESS_ACME_DIRECTORY]
  --acme-directory-ca FILE  CA of a private ACME server's own HTTPS      [VPN_ACCESS_ACME_DIRECTORY_CA]
  --acme-http-port PORT  port of the http-01 challenge listener, default 80  [VPN_ACCESS_ACME_HTTP_PORT]
  --egress allow-all|public-only   refuse private and loopback targets    [VPN_ACCESS_EGRESS]
  --idle-timeout SECONDS  close a relayed connection after this long with no byte either way,
                         default 300 (v2ray's connIdle)                 [VPN_ACCESS_IDLE_TIMEOUT]
  --no-ui                do not serve the web UI at /
  --quiet                no request log
`;

export function defaultDataDir(): string {
  return env.VPN_ACCESS_DATA_DIR ?? join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'vpn-access');
}

function fail(message: string): never {
  process.stderr.write(`vpn-access: ${message}\n`);
  process.exit(2);
}

function port(value: string | undefined, fallback: number | null, name: string): number | null {
  if (value === undefined || value === '') return fallback;
  if (value === 'off') return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`${name} must be a port number from 0 to 65535 or "off", not "${value}"`);
  return n;
}

function parseRate(value: string): { max: number; windowMs: number } {
  const m = /^(\d+)\/(\d+)$/.exec(value);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) fail(`--rate-limit takes REQUESTS/SECONDS, such as 600/60, not "${value}"`);
  return { max: Number(m[1]), windowMs: Number(m[2]) * 1000 };
}

async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'data-dir': { type: 'string' },
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
      'idle-timeout': { type: 'string' },
      'no-ui': { type: 'boolean' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const host = values.host ?? env.VPN_ACCESS_HOST ?? '127.0.0.1';
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
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
  const egress = values.egress ?? env.VPN_ACCESS_EGRESS ?? 'allow-all';
  if (egress !== 'allow-all' && egress !== 'public-only') fail('--egress takes allow-all or public-only');
  const idleText = values['idle-timeout'] ?? env.VPN_ACCESS_IDLE_TIMEOUT;
  const idleSeconds = idleText === undefined || idleText === '' ? undefined : Number(idleText);
  if (idleSeconds !== undefined && (!Number.isInteger(idleSeconds) || idleSeconds < 1 || idleSeconds > 86_400)) fail(`--idle-timeout takes whole seconds from 1 to 86400, not "${idleText}"`);
  const linkNetwork = values['link-network'] ?? env.VPN_ACCESS_LINK_NETWORK ?? 'ws';
  if (linkNetwork !== 'ws' && linkNetwork !== 'tcp') fail('--link-network takes ws or tcp');
  const rendererDir = join(ROOT, 'dist', 'renderer');
  const log = createLogger();
  const rateText = values['rate-limit'] ?? env.VPN_ACCESS_RATE_LIMIT;

  const { startServer } = await import('./serve.ts');
  const server = await startServer({
    host,
    port: port(values.port ?? env.VPN_ACCESS_PORT, 8787, '--port') ?? 8787,
    dataDir,
    zonesFile: values.zones ?? env.VPN_ACCESS_ZONES,
    rateLimit: rateText ? parseRate(rateText) : undefined,
    publicHost: values['public-host'] ?? env.VPN_ACCESS_PUBLIC_HOST ?? acmeDomain ?? (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host),
    vlessTcpPort: port(values['vless-tcp-port'] ?? env.VPN_ACCESS_VLESS_TCP_PORT, 8789, '--vless-tcp-port'),
    proxyPort: port(values['proxy-port'] ?? env.VPN_ACCESS_PROXY_PORT, 8788, '--proxy-port'),
    linkNetwork,
    tlsMode,
    tlsCertFile: certFile ? resolve(certFile) : undefined,
    tlsKeyFile: keyFile ? resolve(keyFile) : undefined,
    tlsWatchIntervalMs: watchMs,
    acme,
    egress,
    connectionLimits: idleSeconds === undefined ? undefined : { idleTimeoutMs: idleSeconds * 1000 },
    logger: log,
    logRequests: !values.quiet,
    rendererDir: values['no-ui'] ? undefined : rendererDir,
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') fail(`a port is already in use (${err.message}); choose another with --port, --vless-tcp-port or --proxy-port`);
    throw err;
  });

  if (server.ownerToken) {
    process.stdout.write(
      `\nNew data folder: created customer "default" and its owner token (shown only this once, keep it secret):\n\n  ${server.ownerToken}\n\n`,
    );
  }
  const tls = server.services.settings.tls;
  log.info(`TLS ${tls.enabled ? `on (${tls.source}, sha256 ${tls.fingerprint_sha256})` : 'off'}: ${tls.reason}`);
  log.info(`listening: API ${server.baseUrl}, VLESS ws ${server.origin.replace(/^http/, 'ws')}${server.services.settings.link.wsPath}` +
    `, VLESS tcp ${server.vlessTcpPort ?? 'off'}, proxy ${server.proxyPort ?? 'off'}, data ${dataDir}`);
  if (!values['no-ui'] && existsSync(join(rendererDir, 'index.html'))) {
    log.info(`web UI: ${server.origin}/`);
    // The token is printed once, above; the UI asks for it (or takes it from `/#token=...`).
    if (server.ownerToken) log.info(`sign in to the web UI with the owner token above (or open ${server.origin}/#token=<token>)`);
  }
  if (host !== '127.0.0.1' && host !== '::1' && host !== 'localhost') log.warn(`bound to ${host}: reachable from other machines`);
  // certbot and acme.sh deploy hooks send SIGHUP: re-read the certificate files now.
  process.on('SIGHUP', () => void server.services.tls.reload());

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: shutting down`);
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

function token(argv: string[]): void {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { customer: { type: 'string' }, role: { type: 'string' }, 'data-dir': { type: 'string' }, json: { type: 'boolean' } },
  });
  const store = new Store(openDatabase(resolve(values['data-dir'] ?? defaultDataDir())));
  try {
    if (sub === 'create') {
      const role = (values.role ?? 'owner') as Role;
      if (role !== 'owner' && role !== 'agent') fail('--role takes owner or agent');
      const customer = values.customer;
      if (!customer) fail('token create needs --customer NAME');
      process.stdout.write(store.createToken(customer, role).token + '\n');
    } else if (sub === 'list') {
      const rows = store.listTokens();
      if (values.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      else if (rows.length === 0) process.stdout.write('no tokens\n');
      else
        for (const t of rows)
          process.stdout.write(`${t.id}  ${t.prefix}…  ${t.role.padEnd(5)}  ${t.customer_name}  created ${t.created_at}${t.revoked_at ? `  revoked ${t.revoked_at}` : ''}\n`);
    } else if (sub === 'revoke') {
      const ref = positionals[0];
      if (!ref) fail('token revoke needs a token id, prefix or the token itself');
      const t = store.revokeToken(ref);
      if (!t) fail(`no single active token matches "${ref.slice(0, 10)}…"`);
      process.stdout.write(`revoked ${t.id} (${t.prefix}…, ${t.role}, customer ${t.customer_name})\n`);
    } else {
      fail(`unknown token command "${sub ?? ''}"; use create, list or revoke`);
    }
  } finally {
    store.db.close();
  }
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') await serve(rest);
  else if (command === 'token') token(rest);
  else if (!command || command === 'help' || command === '--help' || command === '-h') process.stdout.write(USAGE);
  else fail(`unknown command "${command}"\n\n${USAGE}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`vpn-access: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
