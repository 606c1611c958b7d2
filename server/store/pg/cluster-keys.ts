// Keys the instances of a cluster share, kept in the database (cluster_keys): made once by
// whichever instance needs one first (INSERT ... ON CONFLICT DO NOTHING), then read by all. Used
// for the subscription URL secrets (HMAC key) and the webhook secrets (AES-GCM key) on
// PostgreSQL, where each instance's data folder is its own. The database is the cluster's secret
// store (it also holds the sessions' ids, the VLESS credentials): protect it as such.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';

export async function clusterKey(pool: pg.Pool, name: string, bytes: number): Promise<Buffer> {
  await pool.query('INSERT INTO cluster_keys (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, randomBytes(bytes).toString('base64')]);
  const r = await pool.query<{ value: string }>('SELECT value FROM cluster_keys WHERE name = $1', [name]);
  const key = Buffer.from(r.rows[0].value, 'base64');
  if (key.length !== bytes) throw new Error(`the cluster's ${name} key is not ${bytes} bytes`);
  return key;
}
