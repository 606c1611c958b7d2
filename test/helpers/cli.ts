// Runs the real `vpn-access` command line (server/cli.ts) as a child process, or the bin
// launcher (bin/vpn-access.mjs) forced onto the bundle or the sources.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { CLI, NODE, ROOT, waitFor } from './server.ts';

export const BIN = join(ROOT, 'bin', 'vpn-access.mjs');

export interface ServeProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Everything the process wrote to standard output so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or null) and signal when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

export const childEnv = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_') || k.startsWith('NODE_TEST')) delete env[k];
  return env;
};

/**
 * `vpn-access serve` on a free port; resolves once it logs the line with its address.
 * By default server/cli.ts itself runs; `launch` runs the bin with VPN_ACCESS_LAUNCH set.
 */
export function serve(dataDir: string, extra: string[] = [], timeoutMs = 20_000, launch?: 'bundle' | 'source'): Promise<ServeProcess> {
  const child = spawn(
    NODE,
    [launch ? BIN : CLI, 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--no-ui', ...extra],
    { cwd: ROOT, env: launch ? { ...childEnv(), VPN_ACCESS_LAUNCH: launch } : childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start within ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`));
    }, timeoutMs);
    const check = () => {
      const m = /listening: API (https?:\/\/[^,\s]+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      resolve({ child, baseUrl: m[1], stdout: () => out, stderr: () => err, exited, kill: (s = 'SIGTERM') => void child.kill(s) });
    };
    child.stdout!.on('data', check);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited early (${code ?? signal})\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}

/** Runs `vpn-access ARGS...` to completion. */
export function runCli(args: string[], timeoutMs = 20_000): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, [CLI, ...args], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs `vpn-access token ...` to completion. */
export const tokenCli = (args: string[]) => runCli(['token', ...args]);

/**
 * Makes sure dist/server/cli.mjs exists and is not older than the sources (what
 * `npm run build` leaves), building it with scripts/build-server.ts only when it is not.
 */
export function ensureServerBundle(): void {
  const env = { ...childEnv(), VPN_ACCESS_LAUNCH: 'bundle' };
  if (spawnSync(NODE, [BIN, 'help'], { cwd: ROOT, env, stdio: 'ignore', timeout: 20_000 }).status === 0) return;
  const r = spawnSync(NODE, [join(ROOT, 'scripts', 'build-server.ts')], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`building the server bundle failed: ${r.stderr}`);
}

/** The owner token a first start prints, if any. */
export function printedToken(stdout: string): string | undefined {
  return /^\s+(vad_[A-Za-z0-9_-]+)\s*$/m.exec(stdout)?.[1];
}

/**
 * Runs `argv` (its environment: the test's, without VPN_ACCESS_ variables, plus `env`) until `ready`
 * shows on its stdout, then stops it with SIGTERM; resolves with everything it wrote. Fails, with
 * that output, when it exits first or `timeoutMs` pass.
 */
export async function runUntil(argv: string[], env: Record<string, string>, ready: RegExp, timeoutMs = 30_000): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(argv[0], argv.slice(1), { cwd: '/', env: { ...childEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exited = new Promise((r) => child.once('exit', r));
  try {
    await waitFor(() => ready.test(stdout) || child.exitCode !== null, timeoutMs, `${argv.slice(1, 4).join(' ')} to start`);
    assert.match(stdout, ready, `stdout: ${stdout}\nstderr: ${stderr}`);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return { stdout, stderr };
}
