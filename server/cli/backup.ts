// `vpn-access backup` and `vpn-access restore`: a data folder (SQLite) copied whole while its server
// runs, and put back while it is stopped (server/backup/: what a backup holds and how it is checked).
// On PostgreSQL the database holds the keys too: pg_dump is the backup (docs/operations.md).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BackupRefused, mib, type Progress } from '../backup/files.ts';
import { makeBackup } from '../backup/make.ts';
import { restoreBackup } from '../backup/restore.ts';
import { defaultDataDir, env, fail } from './shared.ts';

const note: Progress = (line) => process.stderr.write(`vpn-access: ${line}\n`);

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

export async function backupCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { out: { type: 'string' }, 'data-dir': { type: 'string' }, database: { type: 'string' } } });
  postgresRefusal(values.database);
  if (!values.out) fail('backup needs --out DIR, a folder that does not exist yet or is empty');
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const made = await refusing(() => makeBackup(dataDir, values.out!, note));
  process.stdout.write(
    `backed up ${dataDir} into ${made.out}: the database (${mib(made.bytes)}, schema ${made.schema_version})${made.others.length ? `, ${made.others.join(', ')}` : ''}\n` +
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
