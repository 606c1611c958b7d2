#!/usr/bin/env node
// Launcher for the `vpn-access` command. It runs the bundle `npm run build` makes,
// dist/server/cli.mjs, when that exists and is not older than the server sources, the
// package.json or the installed packages: one prebuilt file starts several times faster than
// the TypeScript sources. Otherwise (a fresh checkout, or sources edited since the build) it
// runs server/cli.ts from source by Node's type stripping, exactly as before the bundle
// existed. Both need Node 24 (as embedded in Electron): when started by an older system Node,
// it re-runs itself with the Node 24 that `npm ci` installs in node_modules.
// VPN_ACCESS_LAUNCH=bundle or =source forces one of the two (the benchmark and the tests
// compare them); with `bundle` a missing or stale bundle is an error, not a fallback.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import module from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const self = fileURLToPath(import.meta.url);
const root = join(dirname(self), '..');
const major = Number(process.versions.node.split('.')[0]);

/** The bundle, if it is at least as new as everything it was built from; else undefined. */
function freshBundle() {
  const dir = join(root, 'dist', 'server');
  const bundle = join(dir, 'cli.mjs');
  const built = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs;
  if (built === undefined) return undefined;
  let inputs;
  try {
    // The project files the build read (scripts/build-server.ts lists them), relative to root.
    inputs = JSON.parse(readFileSync(join(dir, 'inputs.json'), 'utf8')).map((f) => join(root, f));
  } catch {
    return undefined;
  }
  // npm rewrites node_modules/.package-lock.json at every install, so a changed dependency
  // counts as a change too (the bundle includes the dependencies).
  for (const file of [join(root, 'package.json'), join(root, 'node_modules', '.package-lock.json'), ...inputs]) {
    // A file gone (moved, deleted) means the sources changed too.
    const mtime = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Infinity;
    if (mtime > built) return undefined;
  }
  return bundle;
}

const launch = process.env.VPN_ACCESS_LAUNCH;
const bundle = major >= 24 && launch !== 'source' ? freshBundle() : undefined;
if (launch === 'bundle' && major >= 24 && !bundle) {
  process.stderr.write(`vpn-access: VPN_ACCESS_LAUNCH=bundle, but dist/server/cli.mjs is missing or older than the sources; run "npm run build:server"\n`);
  process.exit(1);
}
if (bundle || (major >= 24 && process.features.typescript)) {
  // V8's code cache (kept in the OS temp folder, keyed by each file's content) saves compiling
  // the bundle, or the sources and the packages they load, again at every start.
  module.enableCompileCache?.();
  const { main } = await import(pathToFileURL(bundle ?? join(root, 'server', 'cli.ts')).href);
  await main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`vpn-access: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
} else {
  const candidates = [join(root, 'node_modules', 'node', 'bin', 'node'), join(root, 'node_modules', '.bin', 'node')];
  const node = candidates.find((p) => existsSync(p));
  // The marker stops a loop should that Node too be unable to run the program.
  if (!node || process.env.VPN_ACCESS_LAUNCHER_REEXEC) {
    process.stderr.write(`vpn-access needs Node 24 with type stripping (this is ${process.version}); run "npm ci" in ${root} first.\n`);
    process.exit(1);
  }
  const child = spawn(node, [self, ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, VPN_ACCESS_LAUNCHER_REEXEC: '1' } });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
