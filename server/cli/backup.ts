// `vpn-access backup` and `vpn-access restore`: a data folder (SQLite) copied whole, while its server
// runs, and put back. What a folder holds and a backup keeps: the database, copied by SQLite's online
// backup in one step (one read snapshot, so the server's writes neither block it nor restart it);
// the two key files, without which webhook secrets cannot be read and every subscription URL changes;
// and the certificates made in it (tls/, acme/), whose pin the links carry. A manifest written last
// (backup.json) lists each file with its SHA-256; restore checks them all before it touches anything,
// takes the folder's lock (refused while a server runs there) and moves whatever it replaces aside.
// On PostgreSQL the database holds the keys too: pg_dump is the backup (docs/operations.md).
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, createReadStream, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { backup as sqliteBackup, DatabaseSync } from 'node:sqlite';
import { KEY_FILES } from '../key-file.ts';
import { DB_FILE } from '../store/db.ts';
import { DataDirLocked, lockDataDir } from '../store/folder-lock.ts';
import { MIGRATIONS } from '../store/migrations/index.ts';
import { acmePaths } from '../tls/acme.ts';
import { selfSignedPaths } from '../tls/self-signed.ts';
import { defaultDataDir, env, fail } from './shared.ts';

const MANIFEST = 'backup.json';
const FORMAT = 1;
/** Besides the database, what a backup keeps when the folder has it, relative to the folder: the keys, then the certificates made in it. */
const { dir: TLS_DIR, cert: TLS_CERT, key: TLS_KEY } = selfSignedPaths('.');
const { dir: ACME_DIR, account: ACME_ACCOUNT, cert: ACME_CERT, key: ACME_KEY } = acmePaths('.');
const KEPT = [KEY_FILES.subscription, KEY_FILES.webhook, TLS_CERT, TLS_KEY, ACME_ACCOUNT, ACME_CERT, ACME_KEY];
/** What a manifest may name (never a path out of the folder), and what a restore replaces. */
const KNOWN = new Set([DB_FILE, ...KEPT]);
const REPLACED = [DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`, KEY_FILES.subscription, KEY_FILES.webhook, TLS_DIR, ACME_DIR];
/** All pages in one backup step: a step that another connection's write interrupts starts over. */
const ONE_STEP = 0x7fffffff;
const PROGRESS_MS = 2000;

interface Manifest {
  format: number;
  made_at: string;
  data_dir: string;
  schema_version: number;
  files: { path: string; bytes: number; sha256: string }[];
}

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
const note = (line: string) => process.stderr.write(`vpn-access: ${line}\n`);

/** A file's SHA-256, read in chunks (a database may be larger than a buffer can hold). */
async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * What a long job on the database is doing, on stderr: every 2 s while it waits, and at each new step
 * once it has run 2 s (a synchronous step, such as SQLite's check, holds the timer back). Quiet when quick.
 */
function progress(bytes: number, first: string): { step(name: string): void; stop(): void } {
  const started = Date.now();
  let current = first;
  const say = () => note(`${current} the database (${mib(bytes)}): ${Math.round((Date.now() - started) / 1000)} s`);
  let timer = setInterval(say, PROGRESS_MS);
  return {
    step: (name) => {
      current = name;
      if (Date.now() - started < PROGRESS_MS) return;
      say();
      clearInterval(timer);
      timer = setInterval(say, PROGRESS_MS);
    },
    stop: () => clearInterval(timer),
  };
}

/** `db`'s pages into `to` in one step, then the copy checked; its schema version and SHA-256. */
async function copyDatabase(db: DatabaseSync, to: string, bytes: number): Promise<{ schema: number; sha256: string }> {
  const shown = progress(bytes, 'copying');
  try {
    await sqliteBackup(db, to, { rate: ONE_STEP });
    shown.step('checking the copy of');
    const copy = new DatabaseSync(to);
    let schema: number;
    try {
      const check = copy.prepare('PRAGMA quick_check').get() as { quick_check: string };
      if (check.quick_check !== 'ok') throw new Error(`the copy of the database failed its check: ${check.quick_check}`);
      schema = (copy.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
    } finally {
      copy.close();
    }
    shown.step('hashing the copy of');
    return { schema, sha256: await sha256(to) };
  } finally {
    shown.stop();
  }
}

/** `files` (paths relative to both folders) from one folder into another, each 0600 in 0700 folders, written whole before it takes its name. */
async function copyFiles(from: string, to: string, files: string[]): Promise<void> {
  for (const f of files) {
    const dest = join(to, f);
    mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
    await copyFile(join(from, f), `${dest}.partial`);
    chmodSync(`${dest}.partial`, 0o600);
    renameSync(`${dest}.partial`, dest);
  }
}

function emptyOrAbsent(dir: string): boolean {
  return !existsSync(dir) || (statSync(dir).isDirectory() && readdirSync(dir).length === 0);
}

function postgresRefusal(database: string | undefined): void {
  if (database ?? env.VPN_ACCESS_DATABASE)
    fail('on PostgreSQL, back up the database itself (pg_dump): it holds the keys too; backup and restore take a SQLite data folder (--data-dir)');
}

export async function backupCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { out: { type: 'string' }, 'data-dir': { type: 'string' }, database: { type: 'string' } } });
  postgresRefusal(values.database);
  if (!values.out) fail('backup needs --out DIR, a folder that does not exist yet or is empty');
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const out = resolve(values.out);
  const dbFile = join(dataDir, DB_FILE);
  if (!existsSync(dbFile)) fail(`no database in ${dataDir}: check --data-dir`);
  if (!emptyOrAbsent(out)) fail(`${out} is a file or a folder that is not empty: back up into a new folder`);
  mkdirSync(out, { recursive: true, mode: 0o700 });
  chmodSync(out, 0o700); // the backup holds session ids, token hashes and keys, as the folder does
  // Not through openDatabase: a backup reads, it never migrates. The busy timeout covers a checkpoint's moment.
  const db = new DatabaseSync(dbFile, { timeout: 5000 });
  const madeAt = new Date().toISOString(); // the snapshot's time: it holds what was committed before it
  let copied: { schema: number; sha256: string };
  try {
    const partial = join(out, `${DB_FILE}.partial`);
    copied = await copyDatabase(db, partial, statSync(dbFile).size);
    chmodSync(partial, 0o600);
    renameSync(partial, join(out, DB_FILE));
  } catch (err) {
    rmSync(out, { recursive: true, force: true });
    fail(`the database could not be copied: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    db.close();
  }
  const others = KEPT.filter((f) => existsSync(join(dataDir, f)));
  await copyFiles(dataDir, out, others);
  const files = [{ path: DB_FILE, bytes: statSync(join(out, DB_FILE)).size, sha256: copied.sha256 }];
  for (const path of others) files.push({ path, bytes: statSync(join(out, path)).size, sha256: await sha256(join(out, path)) });
  const schema = copied.schema;
  const manifest: Manifest = { format: FORMAT, made_at: madeAt, data_dir: dataDir, schema_version: schema, files };
  writeFileSync(join(out, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  process.stdout.write(
    `backed up ${dataDir} into ${out}: the database (${mib(files[0].bytes)}, schema ${schema})${others.length ? `, ${others.join(', ')}` : ''}\n` +
      `it holds secrets (keys, session ids): keep it where only you can read it; restore with: vpn-access restore --from ${out} --data-dir DIR\n`,
  );
}

/** The backup's manifest, each file it lists present and unchanged; fails naming what is wrong. */
async function checkedManifest(from: string): Promise<Manifest> {
  let m: Manifest;
  try {
    m = JSON.parse(readFileSync(join(from, MANIFEST), 'utf8')) as Manifest;
  } catch (err) {
    fail(`${from} is not a backup made by vpn-access backup (${MANIFEST}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'unreadable'})`);
  }
  if (typeof m !== 'object' || m === null || m.format !== FORMAT || !Array.isArray(m.files) || !m.files.some((f) => f?.path === DB_FILE) || !Number.isInteger(m.schema_version) || !Number.isFinite(Date.parse(m.made_at))) fail(`${join(from, MANIFEST)} is not a manifest this version reads`);
  for (const f of m.files) {
    if (typeof f?.path !== 'string' || !KNOWN.has(f.path)) fail(`${join(from, MANIFEST)} names a file a data folder does not hold: ${JSON.stringify(f?.path)}`);
    if (!existsSync(join(from, f.path))) fail(`the backup is incomplete: ${f.path} is missing`);
  }
  const shown = progress(statSync(join(from, DB_FILE)).size, 'checking the backup of');
  try {
    for (const f of m.files) if ((await sha256(join(from, f.path))) !== f.sha256) fail(`the backup is damaged: ${f.path} is not the file it was (its SHA-256 differs)`);
  } finally {
    shown.stop();
  }
  // The schema version from the file's header (user_version, bytes 60-63), without opening it: a backup on read-only media has no room for SQLite's -shm.
  const header = Buffer.alloc(100);
  const fd = openSync(join(from, DB_FILE), 'r');
  try {
    readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (header.toString('latin1', 0, 16) !== 'SQLite format 3\0') fail(`the backup's ${DB_FILE} is not an SQLite database`);
  const version = header.readUInt32BE(60);
  if (version > MIGRATIONS.length) fail(`the backup was made by a newer vpn-access (database schema ${version}; this one knows up to ${MIGRATIONS.length})`);
  return m;
}

/** What restoring replaces in `dataDir`, moved into a `replaced-<time>` folder of it; that folder's name. */
function moveAside(dataDir: string, present: string[]): string {
  const aside = join(dataDir, `replaced-${new Date().toISOString().replaceAll(':', '-')}`);
  mkdirSync(aside, { mode: 0o700 });
  for (const name of present) renameSync(join(dataDir, name), join(aside, name));
  return aside;
}

export async function restoreCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { from: { type: 'string' }, 'data-dir': { type: 'string' }, database: { type: 'string' }, force: { type: 'boolean' } } });
  postgresRefusal(values.database);
  if (!values.from) fail('restore needs --from DIR, a folder made by vpn-access backup');
  const from = resolve(values.from);
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const manifest = await checkedManifest(from);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  let release: () => void;
  try {
    release = lockDataDir(dataDir);
  } catch (err) {
    fail(err instanceof DataDirLocked ? `cannot restore now: ${err.message}` : `cannot use ${dataDir}: ${(err as Error).message}`);
  }
  try {
    const present = REPLACED.filter((f) => existsSync(join(dataDir, f)));
    if (present.length && !values.force) fail(`${dataDir} already holds a data folder's files (${present.join(', ')}); restore replaces them: add --force (they are moved aside, not deleted)`);
    const aside = present.length ? moveAside(dataDir, present) : undefined;
    const shown = progress(statSync(join(from, DB_FILE)).size, 'restoring');
    try {
      await copyFiles(from, dataDir, manifest.files.map((f) => f.path));
    } finally {
      shown.stop();
    }
    process.stdout.write(
      `restored the backup of ${manifest.made_at} (schema ${manifest.schema_version}) into ${dataDir}${aside ? `; what it replaced is in ${aside}` : ''}\n` +
        `start it with: vpn-access serve --data-dir ${dataDir} (sessions active at the backup are repaired at start, as after a crash)\n`,
    );
  } finally {
    release();
  }
}
