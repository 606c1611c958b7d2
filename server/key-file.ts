// A random key kept in a file of the data folder (mode 0600), made on first use: the
// subscription URL key and the webhook secrets' key of the single-process (SQLite) mode. In
// cluster mode the instances share theirs through the database instead (store/repos/cluster-keys.ts).
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The key files of a data folder: the subscription URL key and the webhook secrets' key. */
export const KEY_FILES = { subscription: 'subscription.key', webhook: 'webhook.key' } as const;

export function loadKeyFile(dataDir: string, fileName: string, bytes: number): Buffer {
  const file = join(dataDir, fileName);
  try {
    writeFileSync(file, randomBytes(bytes).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  chmodSync(file, 0o600);
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== bytes) throw new Error(`${file} is not a ${bytes}-byte base64 key`);
  return key;
}
