// A throwaway PostgreSQL 15 server for one test file: initdb in a temporary folder, a free TCP
// port on 127.0.0.1, its unix socket inside the folder, never a system service. When the tests
// run as root the server runs as the unprivileged `postgres` user (PostgreSQL refuses root).
// The postmaster is our direct child, so kill9() really is `kill -9` of the server.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import pg from 'pg';

/** Debian's binaries: a fresh CI machine has them here (not on PATH, not in /usr/local/bin). */
export const PG_BIN = process.env.VAD_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PgServer {
  /** postgres://USER:PASS@127.0.0.1:PORT/DB (the default database is `vad`). */
  url(db?: string): string;
  readonly port: number;
  readonly dir: string;
  /** The postmaster's pid while it runs. */
  readonly pid: number | undefined;
  start(): Promise<void>;
  /** Fast shutdown (SIGINT): active sessions are cut, nothing committed is lost. */
  stop(): Promise<void>;
  /** `kill -9` of the postmaster; its backends exit on their own once they see it gone. */
  kill9(): Promise<void>;
  /** Starts again on the same data folder (after stop() or kill9()); crash recovery runs. */
  restart(): Promise<void>;
  /** A new empty database on this server; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /**
   * Registers a clean-up (closing a pool, a client) that destroy() runs first, newest first,
   * while the server is still up: clients never see it vanish under them at the end.
   */
  onDestroy(fn: () => unknown): void;
  /** Runs the clean-ups, stops the server (SIGKILL if it will not stop), removes the folder. Idempotent. */
  destroy(): Promise<void>;
}

interface Account {
  uid: number;
  gid: number;
}

function postgresAccount(): Account | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => {
    const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error('running as root but there is no `postgres` user to run PostgreSQL as');
    return Number(r.stdout.trim());
  };
  return { uid: id('-u'), gid: id('-g') };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Every server still running and every folder still there, killed and removed when the test
 * process exits, or is interrupted (the signal is then re-raised, so it still ends the process).
 * Only a SIGKILL of the test process itself can leave a server behind.
 */
const running = new Set<ChildProcess>();
const folders = new Set<string>();
function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  for (const dir of folders) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // a backend still writing as it dies; the folder is in the temporary directory
    }
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    killAll();
    process.kill(process.pid, sig);
  });
}

/**
 * initdb + start. With `t`, the server is destroyed when that test (or suite) ends. Nothing is
 * left running even when a test fails: destroy() runs from t.after and from process exit.
 */
export async function startPostgres(t?: TestContext): Promise<PgServer> {
  const account = postgresAccount();
  const dir = mkdtempSync(join(tmpdir(), 'vad-pg-'));
  folders.add(dir);
  const data = join(dir, 'data');
  const sock = join(dir, 'sock');
  mkdirSync(sock);
  const user = 'vad';
  const password = randomBytes(12).toString('hex');
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  chmodSync(dir, 0o700);
  if (account) {
    for (const p of [dir, sock, pwfile]) chownSync(p, account.uid, account.gid);
  }
  const asPostgres = account ? { uid: account.uid, gid: account.gid } : {};
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C', HOME: dir };

  const init = spawnSync(
    join(PG_BIN, 'initdb'),
    ['-D', data, '-U', user, `--pwfile=${pwfile}`, '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C', '--no-sync'],
    { encoding: 'utf8', env, ...asPostgres },
  );
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.stdout}`);
  }

  let port = 0;
  let child: ChildProcess | undefined;
  let log = '';
  let destroyed = false;
  const cleanups: (() => unknown)[] = [];

  const adminConfig = () => ({ host: '127.0.0.1', port, user, password, database: 'postgres', connectionTimeoutMillis: 2000 });

  async function waitReady(proc: ChildProcess): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`postgres exited (${proc.exitCode ?? proc.signalCode}):\n${log.slice(-2000)}`);
      const c = new pg.Client(adminConfig());
      c.on('error', () => {});
      try {
        await c.connect();
        await c.query('SELECT 1');
        await c.end();
        return;
      } catch {
        await c.end().catch(() => {});
        await sleep(50);
      }
    }
    throw new Error(`postgres did not accept connections within 30 s:\n${log.slice(-2000)}`);
  }

  function exited(proc: ChildProcess): Promise<void> {
    if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => proc.once('exit', () => resolve()));
  }

  async function launch(): Promise<void> {
    if (destroyed) throw new Error('this PostgreSQL server was destroyed');
    if (child) throw new Error('PostgreSQL is already running');
    // After kill -9 the old backends may hold the shared memory (or the port) for a moment:
    // postgres then refuses to start, and we try again.
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (port === 0) port = await freePort();
      log = '';
      const proc = spawn(
        join(PG_BIN, 'postgres'),
        [
          '-D', data,
          '-c', `port=${port}`,
          '-c', 'listen_addresses=127.0.0.1',
          '-c', `unix_socket_directories=${sock}`,
          // A test server: an OS crash may lose it, kill -9 may not (synchronous_commit stays on).
          '-c', 'fsync=off',
          '-c', 'full_page_writes=off',
          '-c', 'shared_buffers=16MB',
          '-c', 'max_connections=60',
          '-c', 'logging_collector=off',
        ],
        { env, stdio: ['ignore', 'ignore', 'pipe'], ...asPostgres },
      );
      proc.stderr!.setEncoding('utf8');
      proc.stderr!.on('data', (s: string) => {
        log = (log + s).slice(-20_000);
      });
      running.add(proc);
      proc.once('exit', () => running.delete(proc));
      try {
        await waitReady(proc);
        child = proc;
        return;
      } catch (err) {
        proc.kill('SIGKILL');
        await exited(proc);
        const retriable = /already in use|lock file|could not bind|shared memory/i.test(log);
        if (!retriable || Date.now() > deadline) throw err;
        if (/could not bind|already in use.*port|Address already in use/i.test(log)) port = 0;
        await sleep(100);
      }
    }
  }

  async function halt(signal: NodeJS.Signals): Promise<void> {
    const proc = child;
    child = undefined;
    if (!proc) return;
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
    await exited(proc);
    clearTimeout(timer);
  }

  const server: PgServer = {
    url: (db = 'vad') => `postgres://${user}:${password}@127.0.0.1:${port}/${db}`,
    get port() {
      return port;
    },
    dir,
    get pid() {
      return child?.pid;
    },
    start: launch,
    stop: () => halt('SIGINT'),
    kill9: () => halt('SIGKILL'),
    async restart() {
      await halt('SIGINT');
      await launch();
    },
    async createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
      const c = new pg.Client(adminConfig());
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${name}`);
      } finally {
        await c.end();
      }
      return server.url(name);
    },
    onDestroy(fn) {
      cleanups.push(fn);
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const fn of cleanups.reverse()) {
        try {
          await fn();
        } catch {
          // a clean-up that fails (the pool was already closed) must not keep the server running
        }
      }
      await halt('SIGINT').catch(() => {});
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      folders.delete(dir);
    },
  };

  try {
    await launch();
    await server.createDatabase('vad');
  } catch (err) {
    await server.destroy();
    throw err;
  }
  t?.after(() => server.destroy());
  return server;
}
