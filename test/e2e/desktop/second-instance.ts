// Starts test/e2e/desktop/host.ts — the bundled main process with the stand-in, no browser —
// as a Node process of its own, and waits for it to end.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './harness.ts';

export async function runHostProcess(userData: string, timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const local = join(ROOT, 'node_modules', '.bin', 'node');
  const node = existsSync(local) ? local : process.execPath;
  const t0 = Date.now();
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_')) delete env[k];
  // Asynchronous on purpose: the first instance lives in this process and must answer.
  const child = spawn(node, [join(ROOT, 'test', 'e2e', 'desktop', 'host.ts'), `--user-data-dir=${userData}`], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  clearTimeout(timer);
  return { code, stdout, stderr, ms: Date.now() - t0 };
}
