// Keys the instances of a cluster share, kept in the database (cluster_keys, PostgreSQL): made
// once by whichever instance needs one first (INSERT ... ON CONFLICT DO NOTHING), then read by
// all. Used for the subscription URL secrets (HMAC key) and the webhook secrets (AES-GCM key),
// where each instance's data folder is its own; on SQLite these keys are files of the data
// folder (server/key-file.ts). The database is the cluster's secret store (it also holds the
// sessions' ids, the VLESS credentials): protect it as such.
import { randomBytes } from 'node:crypto';
import { run, scalar, type Op } from '../sql/op.ts';

/** The shared key `name` of `bytes` bytes: made by the first instance to ask, then read. */
function* clusterKey(name: string, bytes: number): Op<Buffer> {
  yield* run('INSERT INTO cluster_keys (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', name, randomBytes(bytes).toString('base64'));
  const key = Buffer.from(yield* scalar<string>('SELECT value FROM cluster_keys WHERE name = ?', name), 'base64');
  if (key.length !== bytes) throw new Error(`the cluster's ${name} key is not ${bytes} bytes`);
  return key;
}

export const clusterKeyOps = { clusterKey };
