// Start-up benchmark: process start to the "listening" line of `vpn-access serve` run by the
// bin launcher from the bundle (dist/server/cli.mjs, rebuilt first so it matches the
// sources), beside the same launcher running the TypeScript sources, `node server/cli.ts`
// itself (how `npm run serve` started before the bundle) and a bare `node -e 0`, all
// measured in turn in the same run. Prints median and best of several starts (each with
// a new data folder, so each also creates the database and the first owner token).
// Target: the bundle listening within 300 ms. Prints figures, never asserts.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'vpn-access.mjs');
const RUNS = Number(process.env.BENCH_STARTS ?? 11);
const TARGET_MS = 300;

const env = (launch?: string) => {
  const e = { ...process.env };
  for (const k of Object.keys(e)) if (k.startsWith('VPN_ACCESS_')) delete e[k];
  return launch ? { ...e, VPN_ACCESS_LAUNCH: launch } : e;
};

/** Milliseconds from spawn to the "listening" line; the process is then stopped. */
function timeServe(launch: 'bundle' | 'source' | 'cli.ts'): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vad-bench-start-'));
  const args = [launch === 'cli.ts' ? join(ROOT, 'server', 'cli.ts') : BIN, 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--no-ui', '--quiet'];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { env: env(launch === 'cli.ts' ? undefined : launch), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (out.includes('listening: API')) {
        resolve(performance.now() - t0);
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
      reject(new Error(`serve (${launch}) ended without listening (${code ?? signal}): ${err.trim()}`));
    });
  }).finally(() => new Promise<void>((done) => (child.exitCode !== null || child.signalCode !== null ? done() : child.once('exit', () => done()))));
}

function timeBareNode(): number {
  const t0 = performance.now();
  spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  return performance.now() - t0;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], best: s[0] };
};

const built = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-server.ts')], { cwd: ROOT, encoding: 'utf8' });
if (built.status !== 0) throw new Error(`building the server bundle failed: ${built.stderr}`);

console.log(`\n== Start-up: process start -> "listening" of vpn-access serve (${RUNS} starts each, interleaved) ==`);
// One unmeasured start of each fills the OS file cache and V8's compile cache for the bundle,
// as on any start after the first following a build.
await timeServe('bundle');
await timeServe('source');
await timeServe('cli.ts');
const bundle: number[] = [];
const source: number[] = [];
const direct: number[] = [];
const bare: number[] = [];
for (let i = 0; i < RUNS; i++) {
  // Interleaved, so a burst of load on the machine hits all three alike.
  bare.push(timeBareNode());
  bundle.push(await timeServe('bundle'));
  source.push(await timeServe('source'));
  direct.push(await timeServe('cli.ts'));
}
const b = stats(bundle);
const s = stats(source);
const n = stats(bare);
const d = stats(direct);
const row = (name: string, x: { median: number; best: number }, extra = '') =>
  console.log(`  ${name.padEnd(50)} median ${x.median.toFixed(0).padStart(5)} ms   best ${x.best.toFixed(0).padStart(5)} ms${extra}`);
row('bare `node -e 0` (baseline)', n);
row('vpn-access serve, bundle (dist/server)', b, `   | ${(b.median / n.median).toFixed(1)}x bare`);
row('vpn-access serve, from source (type strip)', s, `   | bundle is ${(s.median / b.median).toFixed(1)}x faster`);
row('node server/cli.ts serve (the old npm run serve)', d, `   | bundle is ${(d.median / b.median).toFixed(1)}x faster`);
console.log(`target: bundle listening within ${TARGET_MS} ms (median) -> ${b.median <= TARGET_MS ? 'met' : 'NOT met'}` +
  ` (${(b.median - n.median).toFixed(0)} ms above bare node)`);
