// Child processes of the tests (v2ray, pebble, ...): the tail of their output for failure
// messages, and a stop that asks first and insists after a grace period.
import type { ChildProcess } from 'node:child_process';

/** Keeps the last `max` characters of the child's stdout and stderr together. */
export function tailOutput(proc: ChildProcess, max: number): () => string {
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-max);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  return () => out;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited (at once if it already has). */
export async function stopChild(proc: ChildProcess, graceMs = 2000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
