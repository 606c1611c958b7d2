// `vpn-access backup` and `vpn-access restore`: a data folder (SQLite) copied whole while its server
// runs (into a new folder, or a dated one in a folder of backups that keeps the newest N: what a
// daily timer runs), and put back while it is stopped (server/backup/: what a backup holds and how
// it is checked).
// On PostgreSQL the database holds the keys too: pg_dump is the backup (docs/operations.md).
import { chmodSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BackupRefused, mib, type Progress } from '../backup/files.ts';
import { backupInto, makeBackup, type BackupMade } from '../backup/make.ts';
import { restoreBackup } from '../backup/restore.ts';
import { defaultDataDir, env, fail } from './shared.ts';

const note: Progress = { line: (text) => process.stderr.write(`vpn-access: ${text}\n`) };

function postgresRefusal(database: string | undefined): void {
  if (database ?? env.VPN_ACCESS_DATABASE)
    fail('on PostgreSQL, back up the database itself (pg_dump): it holds the keys too; backup and restore take a SQLite data folder (--data-dir)');
}

/** Runs a backup or restore step; a refusal ends the command with its words. */
async function refusing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof BackupRefused) fail(err.message);
    throw err;
  }
}

/** `--out DIR`, or `--into DIR` (a new dated folder in it) with `--keep N` (the oldest beyond N removed). */
function destination(values: { out?: string; into?: string; keep?: string }): { out: string } | { into: string; keep?: number } {
  if (values.out && values.into) fail('backup takes --out DIR or --into DIR, not both');
  if (values.keep !== undefined && !values.into) fail('--keep N goes with --into DIR: it removes the oldest backups there');
  if (values.into) {
    const keep = values.keep === undefined ? undefined : Number(values.keep);
    if (keep !== undefined && !(Number.isInteger(keep) && keep >= 1)) fail(`--keep takes a whole number of backups, 1 or more, not "${values.keep}"`);
    return { into: resolve(values.into), keep };
  }
  if (!values.out) fail('backup needs --out DIR, a folder that does not exist yet or is empty (or --into DIR [--keep N]: a dated folder in DIR)');
  return { out: values.out };
}

export async function backupCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { out: { type: 'string' }, into: { type: 'string' }, keep: { type: 'string' }, 'data-dir': { type: 'string' }, database: { type: 'string' } } });
  postgresRefusal(values.database);
  const to = destination(values);
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  if ('into' in to) {
    mkdirSync(to.into, { recursive: true, mode: 0o700 });
    chmodSync(to.into, 0o700);
  }
  const made: BackupMade & { removed?: string[] } = await refusing(() => ('into' in to ? backupInto(dataDir, to.into, { keep: to.keep, say: note }) : makeBackup(dataDir, to.out, note)));
  const removed = made.removed ?? [];
  process.stdout.write(
    `backed up ${dataDir} into ${made.out}: the database (${mib(made.bytes)}, schema ${made.schema_version})${made.others.length ? `, ${made.others.join(', ')}` : ''}\n` +
      (removed.length && 'into' in to ? `removed the ${removed.length} oldest backup${removed.length === 1 ? '' : 's'} in ${to.into} (kept the newest ${to.keep}): ${removed.join(', ')}\n` : '') +
      `it holds secrets (keys, session ids): keep it where only you can read it; restore with: vpn-access restore --from ${made.out} --data-dir DIR\n`,
  );
}

export async function restoreCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { from: { type: 'string' }, 'data-dir': { type: 'string' }, database: { type: 'string' }, force: { type: 'boolean' } } });
  postgresRefusal(values.database);
  if (!values.from) fail('restore needs --from DIR, a folder made by vpn-access backup');
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const done = await refusing(() => restoreBackup(values.from!, dataDir, { force: values.force, say: note }));
  process.stdout.write(
    `restored the backup of ${done.made_at} (schema ${done.schema_version}) into ${dataDir}${done.replaced_into ? `; what it replaced is in ${done.replaced_into}` : ''}\n` +
      `start it with: vpn-access serve --data-dir ${dataDir} (sessions active at the backup are repaired at start, as after a crash)\n`,
  );
}
