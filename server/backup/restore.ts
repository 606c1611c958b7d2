// Putting a backup (make.ts) back into a data folder whose server is stopped. Every file is checked
// against the manifest before anything changes; the folder's lock is taken (refused while a server
// or the desktop app runs there); what the backup replaces is moved aside into `replaced-<time>/`,
// never deleted, and moved back if the copy fails. Used by `vpn-access restore` and by the desktop
// app's "Restore…", which stops its embedded server first.
import { closeSync, existsSync, mkdirSync, chmodSync, openSync, readFileSync, readSync, renameSync, rmSync, rmdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DB_FILE } from '../store/db.ts';
import { DataDirLocked, lockDataDir } from '../store/folder-lock.ts';
import { MIGRATIONS } from '../store/migrations/index.ts';
import { BackupRefused, copyFiles, FORMAT, KNOWN, MANIFEST, progress, REPLACED, sha256, type Manifest, type Progress } from './files.ts';

export interface Restored {
  made_at: string;
  schema_version: number;
  /** Where what the restore replaced was moved, or null when the folder held none of it. */
  replaced_into: string | null;
  /** The restored database's customers, oldest first. */
  customers: string[];
  /** The restored database's size, in bytes. */
  bytes: number;
}

function isManifest(m: unknown): m is Manifest {
  const v = m as Manifest;
  return typeof v === 'object' && v !== null && v.format === FORMAT && Array.isArray(v.files) && v.files.some((f) => f?.path === DB_FILE) &&
    Number.isInteger(v.schema_version) && Number.isFinite(Date.parse(v.made_at));
}

/** The schema version from the file's header (user_version, bytes 60-63), without opening it: a backup on read-only media has no room for SQLite's -shm. */
function headerVersion(file: string): number {
  const header = Buffer.alloc(100);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (header.toString('latin1', 0, 16) !== 'SQLite format 3\0') throw new BackupRefused(`the backup's ${DB_FILE} is not an SQLite database`);
  return header.readUInt32BE(60);
}

/** The backup's manifest, each file it lists present and unchanged; refuses naming what is wrong. */
export async function checkBackup(from: string, say?: Progress): Promise<Manifest> {
  from = resolve(from);
  let m: unknown;
  try {
    m = JSON.parse(readFileSync(join(from, MANIFEST), 'utf8'));
  } catch (err) {
    throw new BackupRefused(`${from} is not a backup made by vpn-access backup (${MANIFEST}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'unreadable'})`);
  }
  if (!isManifest(m)) throw new BackupRefused(`${join(from, MANIFEST)} is not a manifest this version reads`);
  for (const f of m.files) {
    if (typeof f?.path !== 'string' || !KNOWN.has(f.path)) throw new BackupRefused(`${join(from, MANIFEST)} names a file a data folder does not hold: ${JSON.stringify(f?.path)}`);
    if (!existsSync(join(from, f.path))) throw new BackupRefused(`the backup is incomplete: ${f.path} is missing`);
  }
  const shown = progress(say, statSync(join(from, DB_FILE)).size, 'checking the backup of');
  try {
    for (const f of m.files) if ((await sha256(join(from, f.path))) !== f.sha256) throw new BackupRefused(`the backup is damaged: ${f.path} is not the file it was (its SHA-256 differs)`);
  } finally {
    shown.stop();
  }
  const version = headerVersion(join(from, DB_FILE));
  if (version > MIGRATIONS.length) throw new BackupRefused(`the backup was made by a newer vpn-access (database schema ${version}; this one knows up to ${MIGRATIONS.length})`);
  return m;
}

/** The customers of a restored database, oldest first (read before any server migrates it). */
function customersOf(file: string): string[] {
  const db = new DatabaseSync(file, { timeout: 5000 });
  try {
    return (db.prepare('SELECT name FROM customers ORDER BY created_at, rowid').all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

/** Copies the backup's files in; on a failure, removes what came in and moves what was there back. */
async function putBack(from: string, dataDir: string, files: string[], present: string[], say?: Progress): Promise<string | null> {
  const aside = present.length ? join(dataDir, `replaced-${new Date().toISOString().replaceAll(':', '-')}`) : null;
  if (aside) {
    mkdirSync(aside, { mode: 0o700 });
    for (const name of present) renameSync(join(dataDir, name), join(aside, name));
  }
  const shown = progress(say, statSync(join(from, DB_FILE)).size, 'restoring');
  try {
    await copyFiles(from, dataDir, files);
  } catch (err) {
    // Whatever is at the replaced paths now came from the backup (all that was there is aside).
    for (const name of REPLACED) rmSync(join(dataDir, name), { recursive: true, force: true });
    for (const name of files) {
      try {
        rmSync(join(dataDir, `${name}.partial`), { force: true });
      } catch {
        /* not a file of ours */
      }
    }
    if (aside) {
      for (const name of present) renameSync(join(aside, name), join(dataDir, name));
      rmdirSync(aside);
    }
    throw new BackupRefused(`the backup could not be copied in, and the folder is as it was: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    shown.stop();
  }
  return aside;
}

/** Restores `from` into `dataDir`; a folder that holds a database (or keys, certificates) needs `force`. */
export async function restoreBackup(from: string, dataDir: string, opts: { force?: boolean; say?: Progress } = {}): Promise<Restored> {
  from = resolve(from);
  dataDir = resolve(dataDir);
  const manifest = await checkBackup(from, opts.say);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  let release: () => void;
  try {
    release = lockDataDir(dataDir);
  } catch (err) {
    throw new BackupRefused(err instanceof DataDirLocked ? `cannot restore now: ${err.message}` : `cannot use ${dataDir}: ${(err as Error).message}`);
  }
  try {
    const present = REPLACED.filter((f) => existsSync(join(dataDir, f)));
    if (present.length && !opts.force) throw new BackupRefused(`${dataDir} already holds a data folder's files (${present.join(', ')}); restore replaces them: add --force (they are moved aside, not deleted)`);
    const aside = await putBack(from, dataDir, manifest.files.map((f) => f.path), present, opts.say);
    const db = join(dataDir, DB_FILE);
    return { made_at: manifest.made_at, schema_version: manifest.schema_version, replaced_into: aside, customers: customersOf(db), bytes: statSync(db).size };
  } finally {
    release();
  }
}
