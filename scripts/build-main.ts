// Bundles the Electron main process and the preload with esbuild into CommonJS, the form
// Electron loads: dist/main/index.cjs and dist/preload/index.cjs. `electron`, Node's
// built-ins and the npm dependencies stay external (electron-builder ships node_modules),
// except ESM-only ones, which are bundled so `require` never meets ESM.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
const BUNDLED = new Set(['typebox', '@fastify/type-provider-typebox']);
const external = ['electron', ...Object.keys(pkg.dependencies).filter((d) => !BUNDLED.has(d) && d !== 'electron')];

const common = {
  bundle: true,
  platform: 'node' as const,
  format: 'cjs' as const,
  target: 'node22',
  sourcemap: true,
  logLevel: 'warning' as const,
  external,
};

await build({
  ...common,
  entryPoints: [join(ROOT, 'main', 'index.ts')],
  outfile: join(ROOT, 'dist', 'main', 'index.cjs'),
  // server/app.ts reads '../package.json' relative to its own module URL; in the bundle that
  // URL is made to point at <app root>/server/app.ts, so it still finds the app's package.json.
  banner: { js: 'const __bundle_import_meta_url = require("node:url").pathToFileURL(require("node:path").join(__dirname, "..", "..", "server", "app.ts")).href;' },
  define: { 'import.meta.url': '__bundle_import_meta_url' },
});

// The preload runs sandboxed: it may require only `electron`, so everything else is bundled.
await build({
  ...common,
  external: ['electron'],
  entryPoints: [join(ROOT, 'preload', 'index.ts')],
  outfile: join(ROOT, 'dist', 'preload', 'index.cjs'),
  target: 'chrome120',
});

console.log('built dist/main/index.cjs and dist/preload/index.cjs');
