// The `vpn-access` command line: `serve` runs the service headless; `token` issues,
// lists and revokes API tokens, `node` adds, lists and removes the catalogue's data-plane
// nodes, in a data folder (SQLite) or, with `--database URL`, on PostgreSQL; `node run` is a
// data-plane node itself (server/node/run.ts); `backup` and `restore` copy a data folder whole.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backupCommand, restoreCommand } from './cli/backup.ts';
import { doctor } from './cli/doctor.ts';
import { node } from './cli/node.ts';
import { serve } from './cli/serve.ts';
import { defaultDataDir, fail } from './cli/shared.ts';
import { token } from './cli/token.ts';

export { defaultDataDir };

/** This program's version (package.json, found from this file's path, as the bundle rewrites it). */
const version = () => (createRequire(import.meta.url)('../package.json') as { version: string }).version;

const USAGE = `vpn-access: the VPN access service

Usage:
  vpn-access --version
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
                     [--egress-address ADDR[,ADDR]] [--data-dir DIR] [--control-ca FILE] [--control-pin SHA256]
                     [--relay-port N|off] [--tls auto|on|off] [--tls-cert FILE --tls-key FILE]
                     [--log-format text|json]
                         runs a data-plane node: VLESS (ws on --port, default 8787; tcp,
                         default 8789), the proxy (default 8788) and the geo relay (default
                         8790); TLS on them unless it binds loopback (auto), fed by the control
                         plane(s) at URL (failing over in the order given); --data-dir
                         (default ~/.local/share/vpn-access-node) keeps unacknowledged reports
  vpn-access doctor [serve options] [--url URL --token TOKEN] [--json]
                         checks what makes clients fail before they connect: ports, TLS and
                         the pin in links, the public host, egress, the clock, the database
                         and its migrations, the cluster's nodes and the zone catalogue; takes
                         serve's options (the same configuration) and, with --url and --token,
                         asks that running server; exit status 1 when a check fails
  vpn-access backup --out DIR | --into DIR [--keep N]  [--data-dir DIR]
                         copies a data folder (SQLite) while its server runs: the database, its
                         keys and certificates, with a manifest of checksums (PostgreSQL: pg_dump);
                         --into makes a dated folder in DIR, --keep removes the oldest beyond N
  vpn-access restore --from DIR [--data-dir DIR] [--force]
                         puts a backup back into a data folder whose server is stopped; --force
                         replaces what is there, moving it into a replaced-<time> folder

serve options (environment variable in brackets):
  --host HOST            bind address, default 127.0.0.1 (loopback); 0.0.0.0 or :: bind every
                         interface (links then name the first non-internal address)  [VPN_ACCESS_HOST]
  --port PORT            API port (also VLESS over ws), default 8787      [VPN_ACCESS_PORT]
  --data-dir DIR         data folder, default ~/.local/share/vpn-access   [VPN_ACCESS_DATA_DIR]
  --database URL         postgres://USER:PASS@HOST:PORT/DB: the control plane on PostgreSQL
                         (several serve processes may share it; migrations run on start)
                         instead of SQLite in the data folder            [VPN_ACCESS_DATABASE]
  --read-cache on|off    with --database: answer status reads, creation checks and limits from
                         this instance's cache, each hit after a fence on the LISTEN connection
                         (docs/cluster.md, "Cached reads"); default on   [VPN_ACCESS_READ_CACHE]
  --zones FILE           zone catalogue JSON, default the built-in one    [VPN_ACCESS_ZONES]
  --rate-limit N/S       requests per token per window, default 600/60    [VPN_ACCESS_RATE_LIMIT]
  --public-host HOST     host written into session configurations, default the bind host  [VPN_ACCESS_PUBLIC_HOST]
  --vless-tcp-port PORT  raw TCP VLESS port, default 8789, "off" disables  [VPN_ACCESS_VLESS_TCP_PORT]
  --proxy-port PORT      HTTP and SOCKS5 proxy port, default 8788, "off" disables [VPN_ACCESS_PROXY_PORT]
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
  --egress-address A[,B] local addresses outbound connections leave from; the geo proxy
                         rotates over them (a sticky session keeps one)  [VPN_ACCESS_EGRESS_ADDRESS]
  --http-timeouts H/R/K/I  seconds a client may take over its headers, its whole request, an
                         idle keep-alive, and with no byte either way; default 10/30/65/120  [VPN_ACCESS_HTTP_TIMEOUTS]
  --idle-timeout SECONDS  close a relayed connection after this long with no byte either way,
                         default 300 (v2ray's connIdle)                 [VPN_ACCESS_IDLE_TIMEOUT]
  --metrics-token TOKEN  the bearer token GET /metrics asks for; unset: /metrics answers
                         this machine (loopback) only, and never a request with forwarding
                         headers (a reverse proxy's)                    [VPN_ACCESS_METRICS_TOKEN]
  --trust-proxy LIST     reverse proxies (addresses, CIDRs, loopback) whose X-Forwarded-For
                         names the client; default none: the socket peer [VPN_ACCESS_TRUST_PROXY]
  --no-ui                do not serve the web UI at /
  --quiet                no request log
  --log-format text|json  readable lines (default) or one JSON object a line, for log shippers;
                         with json the first start's owner token goes to stderr  [VPN_ACCESS_LOG_FORMAT]
`;

export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') await serve(rest, USAGE);
  else if (command === 'token') await token(rest);
  else if (command === 'node') await node(rest);
  else if (command === 'doctor') await doctor(rest, USAGE);
  else if (command === 'backup') await backupCommand(rest);
  else if (command === 'restore') await restoreCommand(rest);
  else if (command === '--version' || command === 'version') process.stdout.write(`vpn-access ${version()}\n`);
  else if (!command || command === 'help' || command === '--help' || command === '-h') process.stdout.write(USAGE);
  else fail(`unknown command "${command}"\n\n${USAGE}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`vpn-access: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
