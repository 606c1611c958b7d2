// Runs the bundled main process (dist/main/index.cjs) in a Node process of its own with the
// `electron` stand-in, and no browser: the process that the second-instance spec starts
// beside the app under test. Prints what happened and exits with main's exit code.
//   node test/e2e/desktop/host.ts --user-data-dir=DIR
import Module from 'node:module';
import { join } from 'node:path';
import { createElectron } from './electron-stand-in.ts';

const arg = process.argv.find((a) => a.startsWith('--user-data-dir='));
if (!arg) {
  console.error('usage: node test/e2e/desktop/host.ts --user-data-dir=DIR');
  process.exit(2);
}
const userData = arg.slice('--user-data-dir='.length);
const bundle = join(import.meta.dirname, '..', '..', '..', 'dist', 'main', 'index.cjs');
const { electron, state } = createElectron({
  userData,
  argv: ['electron', bundle, ...process.argv.slice(2)],
  onExit: (code) => {
    console.log(`exit ${code} lock=${state.lock?.held ? 'held' : 'refused'} windows=${state.windows.length} errors=${JSON.stringify(state.errors)}`);
    process.exit(code);
  },
});
const M = Module as unknown as { _load: (req: string, ...rest: unknown[]) => unknown };
const orig = M._load;
M._load = function (req: string, ...rest: unknown[]) {
  return req === 'electron' ? electron : orig.call(this, req, ...rest);
};
Module.createRequire(import.meta.url)(bundle);
(electron as unknown as { markReady(): void }).markReady();
