#!/usr/bin/env node
// Launcher for the `vpn-access` command. The program is TypeScript run by Node's type
// stripping (Node 24, as embedded in Electron). When started by an older system Node,
// re-run it with the Node 24 that `npm ci` installs in node_modules.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'server', 'cli.ts');
const major = Number(process.versions.node.split('.')[0]);

if (major >= 24 && process.features.typescript) {
  const { main } = await import(pathToFileURL(cli).href);
  await main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`vpn-access: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
} else {
  const candidates = [join(root, 'node_modules', 'node', 'bin', 'node'), join(root, 'node_modules', '.bin', 'node')];
  const node = candidates.find((p) => existsSync(p));
  if (!node) {
    process.stderr.write(`vpn-access needs Node 24 (this is ${process.version}); run "npm ci" in ${root} first.\n`);
    process.exit(1);
  }
  const child = spawn(node, [cli, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
