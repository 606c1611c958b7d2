// What a backup of a data folder (SQLite) is made of, shared by making one (make.ts) and putting one
// back (restore.ts): the files it keeps besides the database, its manifest, a file's SHA-256 read in
// chunks, file copies that take their name only once whole, the check of a database copy (in a worker
// thread: a long synchronous check must not stall the server or the desktop app sharing the process),
// and progress lines for a large database.
import { createHash } from 'node:crypto';
import { chmodSync, createReadStream, mkdirSync, renameSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { KEY_FILES } from '../key-file.ts';
import { DB_FILE } from '../store/db.ts';
import { acmePaths } from '../tls/acme.ts';
import { selfSignedPaths } from '../tls/self-signed.ts';

export const MANIFEST = 'backup.json';
export const FORMAT = 1;
const { dir: TLS_DIR, cert: TLS_CERT, key: TLS_KEY } = selfSignedPaths('.');
const { dir: ACME_DIR, account: ACME_ACCOUNT, cert: ACME_CERT, key: ACME_KEY } = acmePaths('.');
/** Besides the database, what a backup keeps when the folder has it, relative to the folder: the keys, then the certificates made in it. */
export const KEPT = [KEY_FILES.subscription, KEY_FILES.webhook, TLS_CERT, TLS_KEY, ACME_ACCOUNT, ACME_CERT, ACME_KEY];
/** What a manifest may name (never a path out of the folder). */
export const KNOWN = new Set([DB_FILE, ...KEPT]);
/** What a restore replaces in the folder. */
export const REPLACED = [DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`, KEY_FILES.subscription, KEY_FILES.webhook, TLS_DIR, ACME_DIR];
const PROGRESS_MS = 2000;

export interface Manifest {
  format: number;
  made_at: string;
  data_dir: string;
  schema_version: number;
  files: { path: string; bytes: number; sha256: string }[];
}

/** Why a backup or a restore did not happen, in words for the person who asked; nothing was changed. */
export class BackupRefused extends Error {
  override name = 'BackupRefused';
}

/**
 * Where a long job's progress goes: `line`, every 2 s once it has run that long (the CLI: stderr;
 * the desktop app: its log); `step`, at once as each step begins (the desktop window shows it).
 */
export interface Progress {
  line(text: string): void;
  /** `doing` is the step's words before "the database" ("copying", "checking the copy of"). */
  step?(doing: string, bytes: number): void;
}

export const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** A file's SHA-256, read in chunks (a database may be larger than a buffer can hold). */
export async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** `files` (paths relative to both folders) from one folder into another, each 0600 in 0700 folders, written whole before it takes its name. */
export async function copyFiles(from: string, to: string, files: string[]): Promise<void> {
  for (const f of files) {
    const dest = join(to, f);
    mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
    await copyFile(join(from, f), `${dest}.partial`);
    chmodSync(`${dest}.partial`, 0o600);
    renameSync(`${dest}.partial`, dest);
  }
}

// Runs in a worker thread (CommonJS, evaluated): SQLite's check reads every page synchronously.
const CHECK_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData);
try {
  const check = db.prepare('PRAGMA quick_check').get().quick_check;
  const schema = db.prepare('PRAGMA user_version').get().user_version;
  parentPort.postMessage({ check, schema });
} finally {
  db.close();
}`;

export interface DatabaseCheck {
  /** SQLite's quick_check answer: `ok` when the file is sound. */
  check: string;
  schema: number;
}

/** Checks a database file (a copy: it is opened read-write) off the event loop. */
export function checkDatabase(file: string): Promise<DatabaseCheck> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(CHECK_SOURCE, { eval: true, workerData: file });
    worker.once('message', (m: DatabaseCheck) => resolve(m));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the check of ${file} ended without an answer (exit ${code})`)));
  });
}

/**
 * What a long job on the database is doing, on `out`: a line every 2 s while it runs, and at each
 * new step once it has run 2 s (quiet when quick); each step to `out.step` as it begins.
 */
export function progress(out: Progress | undefined, bytes: number, first: string): { step(name: string): void; stop(): void } {
  const started = Date.now();
  let current = first;
  const say = () => out?.line(`${current} the database (${mib(bytes)}): ${Math.round((Date.now() - started) / 1000)} s`);
  let timer = setInterval(say, PROGRESS_MS);
  out?.step?.(first, bytes);
  return {
    step: (name) => {
      current = name;
      out?.step?.(name, bytes);
      if (Date.now() - started < PROGRESS_MS) return;
      say();
      clearInterval(timer);
      timer = setInterval(say, PROGRESS_MS);
    },
    stop: () => clearInterval(timer),
  };
}
