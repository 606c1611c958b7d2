// Subscriptions on PostgreSQL (the cluster mode): the same rows as on SQLite
// (server/store/subscriptions.ts), shared by every `serve` instance, so a subscription URL made
// on one instance works on all of them. The URL secrets are HMAC(key, nonce); on PostgreSQL the
// key is the cluster's, kept in the database (cluster_keys), made once by whichever instance
// needs it first. Whoever reads this database could derive the URLs from it, as they could read
// the sessions' ids, which are the VLESS credentials themselves: the database is the cluster's
// secret store and must be protected as such (docs/cluster.md).
import type pg from 'pg';
import type { SessionRow } from '../../domain.ts';
import { isoNow } from '../../time.ts';
import type { SubscriptionData, SubscriptionRow } from '../subscriptions.ts';
import { clusterKey } from './cluster-keys.ts';

const COLUMNS = 'customer_id, client_id, nonce, secret_hash, created_at, rotated_at';
const SESSION_COLUMNS =
  'id, customer_id, client_id, zone, reusable, paused, status, uploaded_bytes, downloaded_bytes, duration, connections, created_at, expires_at';

export class PgSubscriptionData implements SubscriptionData {
  private readonly pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  async get(customerId: string, clientId: string): Promise<SubscriptionRow | undefined> {
    return (await this.pool.query<SubscriptionRow>(`SELECT ${COLUMNS} FROM subscriptions WHERE customer_id = $1 AND client_id = $2`, [customerId, clientId])).rows[0];
  }

  async findBySecretHash(hash: string): Promise<SubscriptionRow | undefined> {
    return (await this.pool.query<SubscriptionRow>(`SELECT ${COLUMNS} FROM subscriptions WHERE secret_hash = $1`, [hash])).rows[0];
  }

  async upsert(customerId: string, clientId: string, nonce: string, secretHash: string): Promise<SubscriptionRow> {
    const now = isoNow();
    const r = await this.pool.query<SubscriptionRow>(
      `INSERT INTO subscriptions (customer_id, client_id, nonce, secret_hash, created_at, rotated_at) VALUES ($1, $2, $3, $4, $5, NULL)
       ON CONFLICT (customer_id, client_id) DO UPDATE SET nonce = excluded.nonce, secret_hash = excluded.secret_hash, rotated_at = $5
       RETURNING ${COLUMNS}`,
      [customerId, clientId, nonce, secretHash, now],
    );
    return r.rows[0];
  }

  async delete(customerId: string, clientId: string): Promise<boolean> {
    return ((await this.pool.query('DELETE FROM subscriptions WHERE customer_id = $1 AND client_id = $2', [customerId, clientId])).rowCount ?? 0) > 0;
  }

  async usableSessions(customerId: string, clientId: string, limit = 200): Promise<SessionRow[]> {
    const r = await this.pool.query<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE customer_id = $1 AND client_id = $2 AND status <> 'ended' AND NOT paused ORDER BY seq DESC LIMIT $3`,
      [customerId, clientId, limit],
    );
    return r.rows.map((row) => ({ ...row, uploaded_bytes: Number(row.uploaded_bytes), downloaded_bytes: Number(row.downloaded_bytes), duration: Number(row.duration), connections: Number(row.connections) }));
  }

  /** The cluster's subscription key: made once (the first instance to ask wins), then read. */
  clusterKey(bytes: number): Promise<Buffer> {
    return clusterKey(this.pool, 'subscriptions', bytes);
  }
}
