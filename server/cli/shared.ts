// What the `vpn-access` commands share: the environment, the default data folder, exiting with
// a clear message, port and database-URL arguments, and the store a command works on.
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LogFormat } from '../log.ts';
import { type ControlStore, sqliteControlStore } from '../store/control.ts';
import { DB_FILE, openDatabase } from '../store/db.ts';
import { Store } from '../store/store.ts';

export const env = process.env;

/** A host name, an IPv4 address or an IPv6 address (bracketed or not): what links and binds may name. */
export const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253}|[0-9A-Fa-f:.]+)$/;

export function defaultDataDir(): string {
  return env.VPN_ACCESS_DATA_DIR ?? join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'vpn-access');
}

/** `--log-format` (or VPN_ACCESS_LOG_FORMAT): text (the default) or json. */
export function logFormat(value: string | undefined): LogFormat {
  if (value === undefined || value === '' || value === 'text') return 'text';
  if (value === 'json') return 'json';
  fail(`--log-format takes text or json, not "${value}"`);
}

export function fail(message: string): never {
  process.stderr.write(`vpn-access: ${message}\n`);
  process.exit(2);
}

export function port(value: string | undefined, fallback: number | null, name: string): number | null {
  if (value === undefined || value === '') return fallback;
  if (value === 'off') return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`${name} must be a port number from 0 to 65535 or "off", not "${value}"`);
  return n;
}

export function databaseUrl(value: string | undefined): string | undefined {
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
export function redactUrl(value: string): string {
  const url = new URL(value);
  if (url.password) url.password = '***';
  return url.toString();
}

/** A shell word: as is when it is plain, else in single quotes. */
const shellWord = (w: string) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);

/**
 * The complete command that makes an owner token for the customer a first start creates, on
 * this data folder or database (its password shown as ***, to be filled in).
 */
export function tokenCreateCommand(where: { dataDir?: string; database?: string }): string {
  const target = where.database ? ` --database ${shellWord(redactUrl(where.database))}` : where.dataDir ? ` --data-dir ${shellWord(where.dataDir)}` : '';
  return `vpn-access token create --customer default --role owner${target}`;
}

/**
 * The store of `token` and `node`: PostgreSQL with --database (or VPN_ACCESS_DATABASE), else the data
 * folder. `makes`: the command creates something (a token, a node), so a data
 * folder without a database gets one, said on stderr (a mistyped --data-dir shows); a command that
 * reads or changes what exists fails there instead of making an empty database to find nothing in.
 */
export async function openStore(values: { 'data-dir'?: string; database?: string }, makes: boolean): Promise<ControlStore> {
  const url = databaseUrl(values.database ?? env.VPN_ACCESS_DATABASE);
  if (values.database && values['data-dir']) fail('use either --data-dir or --database, not both');
  if (!url) {
    const dir = resolve(values['data-dir'] ?? defaultDataDir());
    if (!existsSync(join(dir, DB_FILE))) {
      if (!makes) fail(`no database in ${dir}: check --data-dir (serve makes the database at its first start)`);
      process.stderr.write(`vpn-access: no database in ${dir} yet: made a new one (serve --data-dir ${dir} uses it)\n`);
    }
    return sqliteControlStore(new Store(openDatabase(dir)));
  }
  const { PgStore } = await import('../store/pg/store.ts');
  try {
    return await PgStore.open(url, { max: 2, applicationName: 'vpn-access cli' });
  } catch (err) {
    fail(`cannot use the database at ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** `--egress-address A[,B...]`: local IP addresses (literals, no names), each once; undefined when not given. */
export function egressAddressList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const list = value.split(',').map((a) => a.trim());
  for (const a of list) if (!isIP(a)) fail(`--egress-address takes local IP addresses separated by commas, not "${a}"`);
  if (new Set(list).size !== list.length) fail('--egress-address names an address twice');
  return list;
}
