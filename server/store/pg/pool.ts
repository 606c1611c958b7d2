// The PostgreSQL control plane's connection pool, and what a lost database looks like to the server:
// every query fails fast with DatabaseUnavailable (`service_unavailable`, 500 with Retry-After): a
// refused connection at once, a black-holed one within `connectTimeoutMs`, a query whose server
// vanished mid-way within `queryTimeoutMs`. Nothing needs restarting: the pool drops broken
// connections and opens new ones on the next query.
import pg from 'pg';
import { ApiError } from '../../contract/errors.ts';
import { unwritable } from '../sql/unwritable.ts';

/** Seconds a client is told to wait before retrying while the database is unreachable. */
export const RETRY_AFTER_SECONDS = 2;

/** The database could not be reached: the request may be retried; nothing was half-written. */
export class DatabaseUnavailable extends ApiError {
  readonly retryAfterSeconds = RETRY_AFTER_SECONDS;
  constructor(cause: unknown) {
    super('service_unavailable', 'The database is unreachable; retry shortly.', { retry_after: RETRY_AFTER_SECONDS });
    this.cause = cause;
  }
}

// "The server or connection went away", not "the statement is wrong": SQLSTATE class 08 (connection
// exception), 57P01-57P03 (shutdown, crash, starting up), 53300 (too many connections).
const LOST_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const LOST_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const LOST_MESSAGES = /Connection terminated|Client was closed and is not queryable|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection terminated due to connection timeout|the database system is (starting up|shutting down|in recovery mode)/i;

/** True when `err` says the database is unreachable rather than that a statement failed. */
export function isConnectionLoss(err: unknown): boolean {
  if (err instanceof DatabaseUnavailable) return true;
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (e.code.startsWith('08') || LOST_SQLSTATES.has(e.code) || LOST_ERRNOS.has(e.code))) return true;
  // An AggregateError of a dual-stack connect attempt.
  if (Array.isArray(e.errors) && e.errors.some(isConnectionLoss)) return true;
  return typeof e.message === 'string' && LOST_MESSAGES.test(e.message);
}

/** Rethrows connection loss as DatabaseUnavailable, a full disk (and the like) as DatabaseUnwritable, anything else unchanged. */
export function mapDatabaseError(err: unknown): never {
  if (err instanceof DatabaseUnavailable) throw err;
  if (isConnectionLoss(err)) throw new DatabaseUnavailable(err);
  throw unwritable(err);
}

export interface PoolOptions {
  /** Pool size per process (several processes share one server: keep it modest). */
  max?: number;
  connectTimeoutMs?: number;
  /** Client-side bound on one query, also sent as statement_timeout to the server. */
  queryTimeoutMs?: number;
  /** Where errors of idle connections go (a lost server closes them all at once). */
  onIdleError?: (err: Error) => void;
  applicationName?: string;
}

/** bigint (int8) and numeric, the type of SUM over bigint columns. */
const NUMBER_OIDS = new Set([20, 1700]);

/**
 * bigint columns (ids, byte counters, counts) and sums come back as JS numbers, as on SQLite, so no
 * operation converts them: every stored value is far below 2^53 (no column is numeric; aggregates are).
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (NUMBER_OIDS.has(oid) && format !== 'binary') return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as unknown as pg.CustomTypesConfig;

/** Gives a connection back; a failed one (not a statement's error: those carry a severity) is destroyed. */
export function releaseClient(client: pg.PoolClient, err: unknown): void {
  client.release(err instanceof Error && !('severity' in err) ? err : undefined);
}

/** Runs `fn` in one transaction on one pooled connection; a lost database throws DatabaseUnavailable. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect().catch(mapDatabaseError);
  let broken: unknown;
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    broken = err;
    await client.query('ROLLBACK').catch(() => {});
    return mapDatabaseError(err);
  } finally {
    releaseClient(client, broken);
  }
}

/** The backend process ids of each pool's open connections (ownBackends). */
const BACKENDS = new WeakMap<pg.Pool, Set<number>>();

/**
 * The PostgreSQL backend process ids of the pool's open connections: a notification whose
 * processId is one of them was sent by a statement of this process.
 */
export const ownBackends = (pool: pg.Pool): ReadonlySet<number> => BACKENDS.get(pool) ?? new Set();

/**
 * How long PostgreSQL lets a session sit idle inside a transaction before it ends the session (and
 * the transaction with it). A transaction here is a few statements sent back to back, so 3 s idle
 * inside one is a process that stopped: a crashed handler, or a whole instance hung (a stopped
 * process, a frozen VM) while the nodes and customers whose rows it locked are served by another
 * instance. Its locks are released within that time, inside the nodes' 10 s up window.
 */
export const IDLE_IN_TRANSACTION_MS = 3_000;

export function openPool(url: string, opts: PoolOptions = {}): pg.Pool {
  const queryTimeoutMs = opts.queryTimeoutMs ?? 10_000;
  const pool = new pg.Pool({
    ...clientConfig(url, opts),
    max: opts.max ?? 10,
    idleTimeoutMillis: 30_000,
    query_timeout: queryTimeoutMs + 1_000,
    statement_timeout: queryTimeoutMs,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
  });
  // Without a listener an idle connection's error (the server was killed) would crash the process.
  pool.on('error', (err) => opts.onIdleError?.(err));
  const backends = new Set<number>();
  BACKENDS.set(pool, backends);
  // processID is pg's own field, set from the server's BackendKeyData at connect (not in @types/pg).
  const pid = (client: pg.PoolClient) => (client as unknown as { processID: number | null }).processID;
  pool.on('connect', (client) => {
    // A checked-out connection has no pool listener: if its server dies between two queries of a
    // transaction, an unhandled 'error' would crash the process. Its next query fails instead
    // (service_unavailable), and the pool drops it on release (it is no longer queryable).
    client.on('error', () => {});
    const id = pid(client);
    if (id !== null) backends.add(id);
  });
  pool.on('remove', (client) => {
    const id = pid(client);
    if (id !== null) backends.delete(id);
  });
  return pool;
}

/** The options of a connection, pooled or dedicated (the LISTEN connection): same parsing. */
export function clientConfig(url: string, opts: PoolOptions = {}): pg.ClientConfig {
  return {
    connectionString: url,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 2_000,
    keepAlive: true,
    application_name: opts.applicationName ?? 'vpn-access',
    types,
  };
}
