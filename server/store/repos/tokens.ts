// Customers and API tokens. A token is shown once, in plain text; only its SHA-256 is stored.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { isoNow } from '../../time.ts';
import { all, get, lock, run, scalar, tokensChanged, tx, type Op } from '../sql/op.ts';

export type Role = 'owner' | 'agent';
export interface TokenInfo {
  id: string;
  customer_id: string;
  customer_name: string;
  role: Role;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

const TOKEN_PREFIX = 'vad_';

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const TOKEN_SELECT = `SELECT t.id, t.customer_id, c.name AS customer_name, t.role, t.prefix, t.created_at, t.revoked_at
  FROM tokens t JOIN customers c ON c.id = t.customer_id`;

const countCustomers = () => scalar('SELECT COUNT(*) AS n FROM customers');

/** Race-free across instances: two first requests of a new customer create one row. */
function* ensureCustomer(name: string): Op<{ id: string; created: boolean }> {
  const inserted = yield* get<{ id: string }>(
    'INSERT INTO customers (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING id',
    randomUUID(),
    name,
    isoNow(),
  );
  if (inserted) return { id: inserted.id, created: true };
  const found = yield* get<{ id: string }>('SELECT id FROM customers WHERE name = ?', name);
  return { id: found!.id, created: false };
}

const createToken = tx(function* (customerName: string, role: Role): Op<{ token: string; info: TokenInfo }> {
  const customer = yield* ensureCustomer(customerName);
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const info: TokenInfo = { id: randomUUID(), customer_id: customer.id, customer_name: customerName, role, prefix: token.slice(0, TOKEN_PREFIX.length + 6), created_at: isoNow(), revoked_at: null };
  yield* run('INSERT INTO tokens (id, customer_id, role, hash, prefix, created_at) VALUES (?, ?, ?, ?, ?, ?)', info.id, info.customer_id, role, hashToken(token), info.prefix, info.created_at);
  yield* tokensChanged();
  return { token, info };
});

const findToken = (token: string) => get<TokenInfo>(`${TOKEN_SELECT} WHERE t.hash = ? AND t.revoked_at IS NULL`, hashToken(token));

/** Oldest first; tokens of the same millisecond in the order they were made. */
const listTokens = () => all<TokenInfo>(`${TOKEN_SELECT} ORDER BY t.created_at, {seq:t}`);

/** True while the token with this id exists and is not revoked. */
function* isTokenActive(id: string): Op<boolean> {
  return (yield* get('SELECT 1 AS ok FROM tokens WHERE id = ? AND revoked_at IS NULL', id)) !== undefined;
}

/** Revokes by token id, by the plain token, or by its printed prefix when that is unique. */
const revokeToken = tx(function* (ref: string): Op<TokenInfo | undefined> {
  yield* lock('tokens');
  const candidates = yield* all<TokenInfo>(`${TOKEN_SELECT} WHERE t.revoked_at IS NULL AND (t.id = ? OR t.hash = ? OR t.prefix = ?)`, ref, hashToken(ref), ref);
  if (candidates.length !== 1) return undefined;
  const revokedAt = isoNow();
  yield* run('UPDATE tokens SET revoked_at = ? WHERE id = ?', revokedAt, candidates[0].id);
  yield* tokensChanged();
  return { ...candidates[0], revoked_at: revokedAt };
});

/**
 * Changes whenever tokens may have changed out of this process's sight (the token caches watch
 * it): PostgreSQL's token version, bumped with every token change of any instance; SQLite's
 * data_version, which changes when another connection (another process: the CLI) commits.
 */
const dataVersion = () => scalar({ postgres: 'SELECT version FROM token_version', sqlite: 'PRAGMA data_version' });

export const tokenOps = { countCustomers, ensureCustomer, createToken, findToken, listTokens, isTokenActive, revokeToken, dataVersion };
