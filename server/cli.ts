// The `vpn-access` command line: `serve` runs the service headless; `token` issues,
// lists and revokes API tokens, `node` adds, lists and removes the catalogue's data-plane
// nodes, in a data folder (SQLite) or, with `--database URL`, on PostgreSQL; `node run` is a
// data-plane node itself (server/node/run.ts).
import { existsSync, readFileSync } from 'node:fs';
import { homedir, networkInterfaces } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type ControlStore, sqliteControlStore } from './store/control.ts';
import { openDatabase } from './store/db.ts';
import { type Role, Store } from './store/store.ts';
import { createLogger } from './log.ts';
// serve.ts (and through it fastify and the data plane) is imported only by `serve`, below:
// `token` commands and `help` then start without loading them.
import { decideTls, parseTlsMode } from './tls/mode.ts';
import { choosePublicHost, clearTextReach, isWildcardHost } from './public-host.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;

const USAGE = `vpn-access: the VPN access service

Usage:
  vpn-access serve [options]
  vpn-access token create --customer NAME --role owner|agent [--data-dir DIR | --database URL]
  vpn-access token list [--data-dir DIR | --database URL]
  vpn-access token revoke TOKEN_ID|TOKEN_PREFIX|TOKEN [--data-dir DIR | --database URL]
  vpn-access node add --name NAME --zone CODE --public-host HOST [--data-dir DIR | --database URL]
                         prints only the node's token (shown this once)
  vpn-access node list [--json] [--data-dir DIR | --database URL]
  vpn-access node remove NAME [--data-dir DIR | --database URL]
  vpn-access node run --control URL[,URL...] --token NODE_TOKEN [--host ADDR] [--port N]
                     [--vless-tcp-port N|off] [--proxy-port N|off] [--egress POLICY]
                     [--egress-address ADDR] [--data-dir DIR] [--control-ca FILE]
                         runs a data-plane node: VLESS (ws on --port, default 8787; tcp,
                         default 8789) and the proxy (default 8788), fed by the control
                         plane(s) at URL (failing over in the order given); --data-dir
                         (default ~/.local/share/vpn-access-node) keeps unacknowledged reports

serve options (environment variable in brackets):
  --host HOST            bind address, default 127.0.0.1 (loopback); 0.0.0.0 or :: bind every
                         interface (links then name the first non-internal address)  [VPN_ACCESS_HOST]
  --port PORT            API port (also VLESS over ws), default 8787      [VPN_ACCESS_PORT]
  --data-dir DIR         data folder, default ~/.local/share/vpn-access   [VPN_ACCESS_DATA_DIR]
  --database URL         postgres://USER:PASS@HOST:PORT/DB: the control plane on PostgreSQL
                         (several serve processes may share it; migrations run on start)
                         instead of SQLite in the data folder            [VPN_ACCESS_DATABASE]
  --zones FILE           zone catalogue JSON, default the built-in one    [VPN_ACCESS_ZONES]
  --rate-limit N/S       requests per token per window, default 600/60    [VPN_ACCESS_RATE_LIMIT]
  --public-host HOST     host written into session configurations, default the bind host  [VPN_ACCESS_PUBLIC_HOST]
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
  --egress public-only|lan|allow-all  destinations sessions may reach,   [VPN_ACCESS_EGRESS]
                         default public-only (lan adds private ranges)
  --http-timeouts H/R/K/I  seconds a client may take over its headers, its whole request, an
                         idle keep-alive, and with no byte either way; default 10/30/65/120  [VPN_ACCESS_HTTP_TIMEOUTS]
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

function parseHttpTimeouts(value: string): { headersMs: number; requestMs: number; keepAliveMs: number; idleMs: number } {
  const parts = value.split('/').map(Number);
  if (parts.length !== 4 || parts.some((n) => !Number.isInteger(n) || n < 1)) {
    fail(`--http-timeouts takes HEADERS/REQUEST/KEEPALIVE/IDLE in whole seconds, such as 10/30/65/120, not "${value}"`);
  }
  const [headers, request, keepAlive, idle] = parts;
  if (headers > request) fail(`--http-timeouts: the headers timeout (${headers} s) cannot exceed the request timeout (${request} s)`);
  return { headersMs: headers * 1000, requestMs: request * 1000, keepAliveMs: keepAlive * 1000, idleMs: idle * 1000 };
}

async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'data-dir': { type: 'string' },
      database: { type: 'string' },
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
      'http-timeouts': { type: 'string' },
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
  const database = databaseUrl(values.database ?? env.VPN_ACCESS_DATABASE);
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
  const egress = values.egress ?? env.VPN_ACCESS_EGRESS ?? 'public-only';
  if (egress !== 'public-only' && egress !== 'lan' && egress !== 'allow-all') fail('--egress takes public-only, lan or allow-all');
  const idleText = values['idle-timeout'] ?? env.VPN_ACCESS_IDLE_TIMEOUT;
  const idleSeconds = idleText === undefined || idleText === '' ? undefined : Number(idleText);
  if (idleSeconds !== undefined && (!Number.isInteger(idleSeconds) || idleSeconds < 1 || idleSeconds > 86_400)) fail(`--idle-timeout takes whole seconds from 1 to 86400, not "${idleText}"`);
  const linkNetwork = values['link-network'] ?? env.VPN_ACCESS_LINK_NETWORK ?? 'ws';
  if (linkNetwork !== 'ws' && linkNetwork !== 'tcp') fail('--link-network takes ws or tcp');
  const rendererDir = join(ROOT, 'dist', 'renderer');
  const log = createLogger();
  // What links name: given, the ACME domain, the bind host, or for a wildcard bind the first
  // address other machines can use (0.0.0.0 in a link means nothing to a client).
  const interfaces = networkInterfaces();
  const givenPublicHost = values['public-host'] ?? env.VPN_ACCESS_PUBLIC_HOST ?? acmeDomain;
  const publicHost = givenPublicHost ?? choosePublicHost(host, interfaces) ??
    fail(`--host ${host}: no network interface has an address other machines can use (only loopback or link-local); name the host clients should connect to with --public-host`);
  if (!givenPublicHost && isWildcardHost(host)) log.info(`public host: ${publicHost} (the first non-internal interface address; --public-host changes it)`);
  // Clear text (TLS off, by --tls off or by auto for a local public host) never beyond the local network.
  const tlsDecision = decideTls(tlsMode, publicHost, Boolean(certFile || acme));
  const reach = tlsDecision.enabled ? null : clearTextReach(host, publicHost, interfaces);
  if (reach === 'internet') {
    fail(`refusing to serve without TLS beyond the local network (--host ${host}, public host ${publicHost}): API tokens, session ids ` +
      '(the VLESS credentials) and traffic would cross the internet in clear text. Use --tls on (or auto with a public --public-host), ' +
      'or bind a local address; behind a proxy that terminates TLS, bind to 127.0.0.1 and let the proxy connect there.');
  }
  const rateText = values['rate-limit'] ?? env.VPN_ACCESS_RATE_LIMIT;
  const timeoutsText = values['http-timeouts'] ?? env.VPN_ACCESS_HTTP_TIMEOUTS;

  const { startServer } = await import('./serve.ts');
  const server = await startServer({
    host,
    port: port(values.port ?? env.VPN_ACCESS_PORT, 8787, '--port') ?? 8787,
    dataDir,
    database,
    zonesFile: values.zones ?? env.VPN_ACCESS_ZONES,
    rateLimit: rateText ? parseRate(rateText) : undefined,
    httpTimeouts: timeoutsText ? parseHttpTimeouts(timeoutsText) : undefined,
    publicHost,
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
    if (err.code === 'EDATALOCKED') fail(err.message);
    if (err.code === 'EADDRINUSE') fail(`a port is already in use (${err.message}); choose another with --port, --vless-tcp-port or --proxy-port`);
    throw err;
  });

  // Signals are handled before anything is printed: whoever waits for the 'listening' line may
  // stop the server the moment it reads it, and must get a clean shutdown.
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

  if (server.ownerToken) {
    process.stdout.write(
      `\nNew ${database ? 'database' : 'data folder'}: created customer "default" and its owner token (shown only this once, keep it secret):\n\n  ${server.ownerToken}\n\n`,
    );
  }
  const tls = server.services.settings.tls;
  log.info(`TLS ${tls.enabled ? `on (${tls.source}, sha256 ${tls.fingerprint_sha256})` : 'off'}: ${tls.reason}`);
  log.info(`listening: API ${server.baseUrl}, VLESS ws ${server.origin.replace(/^http/, 'ws')}${server.services.settings.link.wsPath}` +
    `, VLESS tcp ${server.vlessTcpPort ?? 'off'}, proxy ${server.proxyPort ?? 'off'}, data ${database ? `PostgreSQL ${redactUrl(database)}` : dataDir}`);
  if (!values['no-ui'] && existsSync(join(rendererDir, 'index.html'))) {
    log.info(`web UI: ${server.origin}/`);
    // The token is printed once, above; the UI asks for it (or takes it from `/#token=...`).
    if (server.ownerToken) log.info(`sign in to the web UI with the owner token above (or open ${server.origin}/#token= followed by it)`);
  }
  if (reach === 'local') {
    log.warn(`WARNING: no TLS and bound to ${host}: API tokens, session ids (the VLESS credentials) and traffic cross the local network in clear text; --tls on encrypts them`);
  } else if (host !== '127.0.0.1' && host !== '::1' && host !== 'localhost') log.warn(`bound to ${host}: reachable from other machines`);
  // certbot and acme.sh deploy hooks send SIGHUP: re-read the certificate files now.
  process.on('SIGHUP', () => void server.services.tls.reload());

}

/** A postgres:// URL, checked; undefined when none is given. */
function databaseUrl(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail('--database takes a URL such as postgres://USER:PASS@HOST:5432/DB');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') fail('--database takes a postgres:// URL');
  return value;
}

/** The URL without its password, for logs. */
function redactUrl(value: string): string {
  const url = new URL(value);
  if (url.password) url.password = '***';
  return url.toString();
}

/** The store of `token` and `node`: PostgreSQL with --database (or VPN_ACCESS_DATABASE), else the data folder. */
async function openStore(values: { 'data-dir'?: string; database?: string }): Promise<ControlStore> {
  const url = databaseUrl(values.database ?? env.VPN_ACCESS_DATABASE);
  if (values.database && values['data-dir']) fail('use either --data-dir or --database, not both');
  if (!url) return sqliteControlStore(new Store(openDatabase(resolve(values['data-dir'] ?? defaultDataDir()))));
  const { PgStore } = await import('./store/pg/store.ts');
  const { pgControlStore } = await import('./store/control.ts');
  try {
    return pgControlStore(await PgStore.open(url, { max: 2, applicationName: 'vpn-access cli' }));
  } catch (err) {
    fail(`cannot use the database at ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function token(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === 'run') return nodeRun(rest);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { customer: { type: 'string' }, role: { type: 'string' }, 'data-dir': { type: 'string' }, database: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (sub !== 'create' && sub !== 'list' && sub !== 'revoke') fail(`unknown token command "${sub ?? ''}"; use create, list or revoke`);
  const role = (values.role ?? 'owner') as Role;
  if (sub === 'create') {
    if (role !== 'owner' && role !== 'agent') fail('--role takes owner or agent');
    if (!values.customer) fail('token create needs --customer NAME');
  }
  if (sub === 'revoke' && !positionals[0]) fail('token revoke needs a token id, prefix or the token itself');
  const store = await openStore(values);
  try {
    if (sub === 'create') {
      process.stdout.write((await store.createToken(values.customer!, role)).token + '\n');
    } else if (sub === 'list') {
      const rows = await store.listTokens();
      if (values.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      else if (rows.length === 0) process.stdout.write('no tokens\n');
      else
        for (const t of rows)
          process.stdout.write(`${t.id}  ${t.prefix}…  ${t.role.padEnd(5)}  ${t.customer_name}  created ${t.created_at}${t.revoked_at ? `  revoked ${t.revoked_at}` : ''}\n`);
    } else {
      const ref = positionals[0];
      const t = await store.revokeToken(ref);
      if (!t) fail(`no single active token matches "${ref.slice(0, 10)}…"`);
      process.stdout.write(`revoked ${t.id} (${t.prefix}…, ${t.role}, customer ${t.customer_name})\n`);
    }
  } finally {
    await store.close();
  }
}

const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const ZONE_CODE = /^[a-z0-9-]{2,32}$/;
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253}|[0-9A-Fa-f:.]+)$/;

/** `node run`: a data-plane node (server/node/run.ts); runs until SIGINT/SIGTERM or its removal. */
async function nodeRun(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      control: { type: 'string' },
      token: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'vless-tcp-port': { type: 'string' },
      'proxy-port': { type: 'string' },
      egress: { type: 'string' },
      'egress-address': { type: 'string' },
      'data-dir': { type: 'string' },
      'control-ca': { type: 'string' },
    },
  });
  const controls = (values.control ?? '').split(',').map((u) => u.trim()).filter(Boolean);
  if (controls.length === 0) fail('node run needs --control URL[,URL...] (the control plane\'s API address, e.g. http://10.0.0.1:8787)');
  for (const u of controls) {
    let ok = false;
    try {
      ok = ['http:', 'https:', 'ws:', 'wss:'].includes(new URL(u).protocol);
    } catch {
      /* reported below */
    }
    if (!ok) fail(`--control takes http(s):// or ws(s):// URLs, not "${u}"`);
  }
  const token = values.token ?? env.VPN_ACCESS_NODE_TOKEN;
  if (!token || !token.startsWith('vadn_')) fail('node run needs --token NODE_TOKEN (what `node add` printed)');
  const host = values.host ?? '127.0.0.1';
  if (!HOST.test(host)) fail(`--host takes an address, not "${host}"`);
  // The node's listeners have no TLS yet: clear text never beyond the local network.
  if (clearTextReach(host, isWildcardHost(host) ? '127.0.0.1' : host, networkInterfaces()) === 'internet') {
    fail(`refusing to run a node without TLS beyond the local network (--host ${host}); bind a loopback or private address`);
  }
  const egress = values.egress ?? 'public-only';
  if (egress !== 'public-only' && egress !== 'lan' && egress !== 'allow-all') fail('--egress takes public-only, lan or allow-all');
  const egressAddress = values['egress-address'];
  if (egressAddress !== undefined && !/^[0-9A-Fa-f:.]+$/.test(egressAddress)) fail(`--egress-address takes a local IP address, not "${egressAddress}"`);
  let controlCa: string | undefined;
  if (values['control-ca']) {
    try {
      controlCa = readFileSync(resolve(values['control-ca']), 'utf8');
    } catch (err) {
      fail(`--control-ca: ${(err as Error).message}`);
    }
  }
  const log = createLogger();
  const { runNode } = await import('./node/run.ts');
  const node = await runNode({
    controls,
    token,
    host,
    port: port(values.port, 8787, '--port') ?? 8787,
    vlessTcpPort: port(values['vless-tcp-port'], 8789, '--vless-tcp-port'),
    proxyPort: port(values['proxy-port'], 8788, '--proxy-port'),
    egress,
    egressAddress,
    dataDir: resolve(values['data-dir'] ?? join(homedir(), '.local', 'share', 'vpn-access-node')),
    controlCa,
    log,
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') fail(`a port is already in use (${err.message}); choose another with --port, --vless-tcp-port or --proxy-port`);
    throw err;
  });
  const p = node.ports;
  process.stdout.write(`node listening: VLESS ws ${host}:${p.vless_ws_port}, tcp ${p.vless_tcp_port ?? 'off'}, proxy ${p.proxy_port ?? 'off'}\n`);
  const stop = () => void node.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const why = await node.stopped;
  process.stdout.write(why === 'removed' ? 'node removed from the catalogue; stopped\n' : 'node stopped\n');
  process.exit(0);
}

async function node(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === 'run') return nodeRun(rest);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      zone: { type: 'string' },
      'public-host': { type: 'string' },
      'data-dir': { type: 'string' },
      database: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  if (sub !== 'add' && sub !== 'list' && sub !== 'remove') fail(`unknown node command "${sub ?? ''}"; use add, list, remove or run`);
  if (sub === 'add') {
    if (!values.name || !NODE_NAME.test(values.name)) fail('node add needs --name NAME (letters, digits, ".", "_", "-"; at most 63)');
    if (values.name === 'local') fail('"local" names this serve process\'s own data plane; choose another name');
    if (!values.zone || !ZONE_CODE.test(values.zone)) fail('node add needs --zone CODE (a zone code such as de-fra)');
    if (!values['public-host'] || !HOST.test(values['public-host'])) fail('node add needs --public-host HOST (a host name or address clients connect to)');
  }
  if (sub === 'remove' && !positionals[0]) fail('node remove needs the node\'s NAME');
  const store = await openStore(values);
  try {
    if (sub === 'add') {
      if (await store.getNodeByName(values.name!)) fail(`a node named "${values.name}" exists already`);
      const { token } = await store.addNode({ name: values.name!, zone: values.zone!, public_host: values['public-host']! });
      // Only the token, so that scripts can capture it: `TOKEN=$(vpn-access node add ...)`.
      process.stdout.write(token + '\n');
    } else if (sub === 'list') {
      const nodes = await store.listNodes();
      if (values.json) process.stdout.write(JSON.stringify(nodes, null, 2) + '\n');
      else if (nodes.length === 0) process.stdout.write('no nodes\n');
      else
        for (const n of nodes)
          process.stdout.write(`${n.name}  ${n.zone}  ${n.up ? 'up' : 'down'}  last contact ${n.last_contact ?? 'never'}  ${n.public_host}\n`);
    } else {
      const gone = await store.removeNode(positionals[0]);
      if (!gone) fail(`no node named "${positionals[0]}"`);
      process.stdout.write(`removed node ${gone.name} (zone ${gone.zone})\n`);
    }
  } finally {
    await store.close();
  }
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') await serve(rest);
  else if (command === 'token') await token(rest);
  else if (command === 'node') await node(rest);
  else if (!command || command === 'help' || command === '--help' || command === '-h') process.stdout.write(USAGE);
  else fail(`unknown command "${command}"\n\n${USAGE}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`vpn-access: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
