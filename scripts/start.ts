// `npm start`: launches the Electron app when its binary is installed; otherwise says so
// plainly and starts web mode instead (the server with the built UI), printing the address.
// Builds first when the built files are missing or older than the sources.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const node = process.execPath;

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}
function stale(output: string, sources: string[]): boolean {
  if (!existsSync(output)) return true;
  const built = statSync(output).mtimeMs;
  return sources.some((s) => existsSync(join(ROOT, s)) && newest(join(ROOT, s)) > built);
}
function run(script: string): void {
  const r = spawnSync('npm', ['run', '--silent', script], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function electronBinary(): string | null {
  const pathTxt = join(ROOT, 'node_modules', 'electron', 'path.txt');
  if (!existsSync(pathTxt)) return null;
  const bin = join(ROOT, 'node_modules', 'electron', 'dist', readFileSync(pathTxt, 'utf8').trim());
  return existsSync(bin) ? bin : null;
}

if (stale(join(ROOT, 'dist', 'renderer', 'index.html'), ['renderer'])) run('build:renderer');
const electron = electronBinary();

if (electron) {
  if (stale(join(ROOT, 'dist', 'main', 'index.cjs'), ['main', 'preload', 'server'])) run('build:main');
  const child = spawn(electron, [join(ROOT, 'dist', 'main', 'index.cjs'), ...process.argv.slice(2)], { cwd: ROOT, stdio: 'inherit' });
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  const port = process.env.VPN_ACCESS_PORT ?? '8787';
  process.stdout.write(
    [
      '',
      'The Electron binary is missing (node_modules/electron has no downloaded binary), so the',
      'desktop window cannot open here. Starting web mode instead: the same UI, served by the',
      `server, at http://127.0.0.1:${port}/ — open it in a browser.`,
      'On first start the server prints an owner token below; the page asks for it once.',
      'Later, create one with: node server/cli.ts token create --customer default --role owner',
      '',
    ].join('\n') + '\n',
  );
  const child = spawn(node, [join(ROOT, 'server', 'cli.ts'), 'serve', ...process.argv.slice(2)], { cwd: ROOT, stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
  child.on('exit', (code) => process.exit(code ?? 0));
}
