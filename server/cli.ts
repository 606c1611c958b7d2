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
import { startServer } from './serve.ts';

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
  --tls-cert FILE --tls-key FILE   PEM certificate and key: TLS everywhere [VPN_ACCESS_TLS_CERT/_KEY]
  --egress public-only|lan|allow-all  destinations sessions may reach,   [VPN_ACCESS_EGRESS]
                         default public-only (lan adds private ranges)
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
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      egress: { type: 'string' },
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
  const egress = values.egress ?? env.VPN_ACCESS_EGRESS ?? 'public-only';
  if (egress !== 'public-only' && egress !== 'lan' && egress !== 'allow-all') fail('--egress takes public-only, lan or allow-all');
  const linkNetwork = values['link-network'] ?? env.VPN_ACCESS_LINK_NETWORK ?? 'ws';
  if (linkNetwork !== 'ws' && linkNetwork !== 'tcp') fail('--link-network takes ws or tcp');
  const rendererDir = join(ROOT, 'dist', 'renderer');
  const log = createLogger();
  const rateText = values['rate-limit'] ?? env.VPN_ACCESS_RATE_LIMIT;

  const server = await startServer({
    host,
    port: port(values.port ?? env.VPN_ACCESS_PORT, 8787, '--port') ?? 8787,
    dataDir,
    zonesFile: values.zones ?? env.VPN_ACCESS_ZONES,
    rateLimit: rateText ? parseRate(rateText) : undefined,
    publicHost: values['public-host'] ?? env.VPN_ACCESS_PUBLIC_HOST ?? (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host),
    vlessTcpPort: port(values['vless-tcp-port'] ?? env.VPN_ACCESS_VLESS_TCP_PORT, 8789, '--vless-tcp-port'),
    proxyPort: port(values['proxy-port'] ?? env.VPN_ACCESS_PROXY_PORT, 8788, '--proxy-port'),
    linkNetwork,
    tls: certFile && keyFile ? { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') } : undefined,
    egress,
    logger: log,
    logRequests: !values.quiet,
    rendererDir: values['no-ui'] ? undefined : rendererDir,
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EDATALOCKED') fail(err.message);
    if (err.code === 'EADDRINUSE') fail(`a port is already in use (${err.message}); choose another with --port, --vless-tcp-port or --proxy-port`);
    throw err;
  });

  if (server.ownerToken) {
    process.stdout.write(
      `\nNew data folder: created customer "default" and its owner token (shown only this once, keep it secret):\n\n  ${server.ownerToken}\n\n`,
    );
  }
  log.info(`listening: API ${server.baseUrl}, VLESS ws ${server.origin.replace(/^http/, 'ws')}${server.services.settings.link.wsPath}` +
    `, VLESS tcp ${server.vlessTcpPort ?? 'off'}, proxy ${server.proxyPort ?? 'off'}, data ${dataDir}`);
  if (!values['no-ui'] && existsSync(join(rendererDir, 'index.html'))) {
    log.info(`web UI: ${server.origin}/`);
    // The token is printed once, above; the UI asks for it (or takes it from `/#token=...`).
    if (server.ownerToken) log.info(`sign in to the web UI with the owner token above (or open ${server.origin}/#token=<token>)`);
  }
  if (host !== '127.0.0.1' && host !== '::1' && host !== 'localhost') log.warn(`bound to ${host}: reachable from other machines`);

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
