// Making a backup of a data folder (SQLite) while its server runs: the database copied by SQLite's
// online backup in one step (one read snapshot, so the server's writes neither block it nor restart
// it) and checked; the two key files, without which webhook secrets cannot be read and every
// subscription URL changes; the certificates made in the folder (tls/, acme/), whose pin the links
// carry; last, the manifest (backup.json) with each file's SHA-256. Used by `vpn-access backup` and
// by the desktop app's "Back up…".
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { backup as sqliteBackup, DatabaseSync } from 'node:sqlite';
import { DB_FILE } from '../store/db.ts';
import { BackupRefused, checkDatabase, copyFiles, FORMAT, KEPT, MANIFEST, progress, sha256, type Manifest, type Progress } from './files.ts';

/** A backup folder's name: the time it was made (no colons: not every system allows them), sorting as the time. */
const backupFolderName = (at: Date) => `vpn-access-backup-${at.toISOString().replaceAll(':', '-')}`;
const FOLDER_NAME = /^vpn-access-backup-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(\.\d{3})?Z$/;

/** All pages in one backup step: a step that another connection's write interrupts starts over. */
const ONE_STEP = 0x7fffffff;

export interface BackupMade {
  /** The backup's folder. */
  out: string;
  /** When the snapshot began: the backup holds what was committed before it. */
  made_at: string;
  schema_version: number;
  /** The database's size in the backup. */
  bytes: number;
  /** Besides the database, the files kept (relative paths). */
  others: string[];
  /** Every file, the database first. */
  files: string[];
}

function emptyOrAbsent(dir: string): boolean {
  return !existsSync(dir) || (statSync(dir).isDirectory() && readdirSync(dir).length === 0);
}

/** `db`'s pages into `to` in one step, then the copy checked; its schema version and SHA-256. */
async function copyDatabase(db: DatabaseSync, to: string, bytes: number, say?: Progress): Promise<{ schema: number; sha256: string }> {
  const shown = progress(say, bytes, 'copying');
  try {
    await sqliteBackup(db, to, { rate: ONE_STEP });
    shown.step('checking the copy of');
    const { check, schema } = await checkDatabase(to);
    if (check !== 'ok') throw new Error(`the copy of the database failed its check: ${check}`);
    shown.step('hashing the copy of');
    return { schema, sha256: await sha256(to) };
  } finally {
    shown.stop();
  }
}

/** Backs `dataDir` up into `out` (a folder that does not exist yet, or an empty one). */
export async function makeBackup(dataDir: string, out: string, say?: Progress): Promise<BackupMade> {
  dataDir = resolve(dataDir);
  out = resolve(out);
  const dbFile = join(dataDir, DB_FILE);
  if (!existsSync(dbFile)) throw new BackupRefused(`no database in ${dataDir}: check --data-dir`);
  if (!emptyOrAbsent(out)) throw new BackupRefused(`${out} is a file or a folder that is not empty: back up into a new folder`);
  mkdirSync(out, { recursive: true, mode: 0o700 });
  chmodSync(out, 0o700); // the backup holds session ids, token hashes and keys, as the folder does
  // Not through openDatabase: a backup reads, it never migrates. The busy timeout covers a checkpoint's moment.
  const db = new DatabaseSync(dbFile, { timeout: 5000 });
  const madeAt = new Date().toISOString(); // the snapshot's time: it holds what was committed before it
  let copied: { schema: number; sha256: string };
  try {
    const partial = join(out, `${DB_FILE}.partial`);
    copied = await copyDatabase(db, partial, statSync(dbFile).size, say);
    chmodSync(partial, 0o600);
    renameSync(partial, join(out, DB_FILE));
  } catch (err) {
    rmSync(out, { recursive: true, force: true });
    throw new BackupRefused(`the database could not be copied: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    db.close();
  }
  const others = KEPT.filter((f) => existsSync(join(dataDir, f)));
  const files = [{ path: DB_FILE, bytes: statSync(join(out, DB_FILE)).size, sha256: copied.sha256 }];
  try {
    await copyFiles(dataDir, out, others);
    for (const path of others) files.push({ path, bytes: statSync(join(out, path)).size, sha256: await sha256(join(out, path)) });
    const manifest: Manifest = { format: FORMAT, made_at: madeAt, data_dir: dataDir, schema_version: copied.schema, files };
    writeFileSync(join(out, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  } catch (err) {
    // A full disk half-way: no folder that looks like a backup and is not one.
    rmSync(out, { recursive: true, force: true });
    throw new BackupRefused(`the keys and certificates could not be copied: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { out, made_at: madeAt, schema_version: copied.schema, bytes: files[0].bytes, others, files: files.map((f) => f.path) };
}

/**
 * Removes the oldest backups in `dir` so that `keep` remain, `made` (the one just made) among them
 * whatever the clock did. Only folders named by backupFolderName that hold a manifest are counted or
 * removed: nothing else in `dir` is touched. Returns the names removed.
 */
function pruneBackups(dir: string, keep: number, made: string): string[] {
  const others = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && FOLDER_NAME.test(e.name) && e.name !== made && existsSync(join(dir, e.name, MANIFEST)))
    .map((e) => e.name)
    .sort()
    .reverse();
  const removed = others.slice(Math.max(0, keep - 1));
  for (const name of removed) rmSync(join(dir, name), { recursive: true, force: true });
  return removed;
}

/**
 * Backs `dataDir` up into a new folder of `into` (which exists) named by the time (`at`, now by
 * default); with `keep`, then removes the oldest backups there beyond `keep` (pruneBackups).
 */
export async function backupInto(dataDir: string, into: string, opts: { keep?: number; at?: Date; say?: Progress } = {}): Promise<BackupMade & { removed: string[] }> {
  const made = await makeBackup(dataDir, join(into, backupFolderName(opts.at ?? new Date())), opts.say);
  return { ...made, removed: opts.keep ? pruneBackups(into, opts.keep, basename(made.out)) : [] };
}
