// SQL of subscriptions: one row per (customer, client_id) while the subscription is on.
// A class of its own beside Store, on the same database connection (migration 2 in db.ts).
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { SessionRow } from '../domain.ts';
import { isoNow } from '../time.ts';
import { preparedStatements } from './db.ts';

export interface SubscriptionRow {
  customer_id: string;
  client_id: string;
  nonce: string;
  secret_hash: string;
  created_at: string;
  rotated_at: string | null;
}

const COLUMNS = 'customer_id, client_id, nonce, secret_hash, created_at, rotated_at';
const SESSION_COLUMNS =
  'id, customer_id, client_id, zone, reusable, paused, status, uploaded_bytes, downloaded_bytes, duration, connections, created_at, expires_at';

/**
 * What the subscription service needs of a database, Promise-returning: the SQLite
 * SubscriptionStore below (through sqliteSubscriptionData) or the PostgreSQL one
 * (server/store/pg/subscriptions.ts), so that subscriptions work in both modes.
 */
export interface SubscriptionData {
  get(customerId: string, clientId: string): Promise<SubscriptionRow | undefined>;
  findBySecretHash(hash: string): Promise<SubscriptionRow | undefined>;
  upsert(customerId: string, clientId: string, nonce: string, secretHash: string): Promise<SubscriptionRow>;
  delete(customerId: string, clientId: string): Promise<boolean>;
  usableSessions(customerId: string, clientId: string, limit?: number): Promise<SessionRow[]>;
}

/** The SQLite store behind the async interface (its answers are already settled). */
export function sqliteSubscriptionData(store: SubscriptionStore): SubscriptionData {
  const wrap = <A extends unknown[], R>(fn: (...a: A) => R) => (...a: A): Promise<R> => {
    try {
      return Promise.resolve(fn(...a));
    } catch (err) {
      return Promise.reject(err);
    }
  };
  return {
    get: wrap((c: string, k: string) => store.get(c, k)),
    findBySecretHash: wrap((h: string) => store.findBySecretHash(h)),
    upsert: wrap((c: string, k: string, n: string, h: string) => store.upsert(c, k, n, h)),
    delete: wrap((c: string, k: string) => store.delete(c, k)),
    usableSessions: wrap((c: string, k: string, limit?: number) => store.usableSessions(c, k, limit)),
  };
}

export class SubscriptionStore {
  private readonly db: DatabaseSync;
  private readonly q: (sql: string) => StatementSync;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.q = preparedStatements(db);
  }


  get(customerId: string, clientId: string): SubscriptionRow | undefined {
    return this.q(`SELECT ${COLUMNS} FROM subscriptions WHERE customer_id = ? AND client_id = ?`).get(customerId, clientId) as
      | SubscriptionRow
      | undefined;
  }

  findBySecretHash(hash: string): SubscriptionRow | undefined {
    return this.q(`SELECT ${COLUMNS} FROM subscriptions WHERE secret_hash = ?`).get(hash) as SubscriptionRow | undefined;
  }

  /** Turns the subscription on, or gives it a new nonce (and so a new secret) when it is on. */
  upsert(customerId: string, clientId: string, nonce: string, secretHash: string): SubscriptionRow {
    const now = isoNow();
    this.q(
      `INSERT INTO subscriptions (customer_id, client_id, nonce, secret_hash, created_at, rotated_at) VALUES (?, ?, ?, ?, ?, NULL)
       ON CONFLICT (customer_id, client_id) DO UPDATE SET nonce = excluded.nonce, secret_hash = excluded.secret_hash, rotated_at = ?`,
    ).run(customerId, clientId, nonce, secretHash, now, now);
    return this.get(customerId, clientId)!;
  }

  delete(customerId: string, clientId: string): boolean {
    return this.q('DELETE FROM subscriptions WHERE customer_id = ? AND client_id = ?').run(customerId, clientId).changes > 0;
  }

  /** Sessions of the client that may still carry traffic as stored: not ended, not paused; newest first. */
  usableSessions(customerId: string, clientId: string, limit = 200): SessionRow[] {
    const rows = this.q(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE customer_id = ? AND client_id = ? AND status <> 'ended' AND paused = 0 ORDER BY seq DESC LIMIT ?`,
    ).all(customerId, clientId, limit) as unknown as (Omit<SessionRow, 'reusable' | 'paused'> & { reusable: number; paused: number })[];
    return rows.map((r) => ({ ...r, reusable: r.reusable === 1, paused: r.paused === 1 }));
  }
}
