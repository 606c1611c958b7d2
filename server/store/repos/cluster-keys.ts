// Keys a cluster's instances share (cluster_keys, PostgreSQL; each has its own data folder): made by
// the first instance to need one, then read by all. For subscription URL secrets (HMAC key) and webhook
// secrets (AES-GCM key); on SQLite they are data folder files (server/key-file.ts). The database is the
// cluster's secret store (it also holds session ids, the VLESS credentials): protect it as such.
import { randomBytes } from 'node:crypto';
import { run, scalar, type Op } from '../sql/op.ts';

/** The shared key `name` of `bytes` bytes. */
function* clusterKey(name: string, bytes: number): Op<Buffer> {
  yield* run('INSERT INTO cluster_keys (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', name, randomBytes(bytes).toString('base64'));
  const key = Buffer.from(yield* scalar<string>('SELECT value FROM cluster_keys WHERE name = ?', name), 'base64');
  if (key.length !== bytes) throw new Error(`the cluster's ${name} key is not ${bytes} bytes`);
  return key;
}

export const clusterKeyOps = { clusterKey };
