// Bundles the headless server (the `vpn-access` command line, server/cli.ts and everything
// it imports) with esbuild into ES modules, dist/server/cli.mjs and its chunks, which
// bin/vpn-access.mjs loads instead of the TypeScript sources when it is at least as new as
// them: three prebuilt files start far faster than ~40 sources type-stripped at every start
// plus ~300 package files each resolved and read.
// The npm dependencies are bundled too: resolving and loading fastify's ~300 CommonJS files
// one by one costs more at start than all of our own modules (measured: median 480 ms to
// listening with them external, 300 ms bundled). The few a dependency loads by name at run time
// (optional ones such as ws's utf-8-validate) still resolve from node_modules through `require`.
import { build, type Plugin } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

// bin/vpn-access.mjs and test/helpers/cli.ts look for dist/server/cli.mjs.
const OUT = join(ROOT, 'dist', 'server');
rmSync(OUT, { recursive: true, force: true }); // no chunk of an earlier build stays behind

// Server modules find files next to their own source (app.ts reads '../package.json', cli.ts
// finds dist/renderer from the app root). In the bundle each project file's `import.meta.url`
// is rewritten to name that file's own source path, computed from where the bundle sits, so
// such relative paths resolve exactly as when run from source, in whatever folder the file is.
// (The JSON the sources import, such as zones/default-zones.json, is inlined by esbuild.)
const sourceUrls: Plugin = {
  name: 'source-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      const text = readFileSync(args.path, 'utf8');
      if (/import\.meta\.(dirname|filename)\b/.test(text)) {
        return { errors: [{ text: `${relative(ROOT, args.path)}: use import.meta.url (import.meta.dirname and .filename are not rewritten for the bundle)` }] };
      }
      const rel = JSON.stringify(relative(OUT, args.path).split(sep).join('/'));
      return { contents: text.replace(/\bimport\.meta\.url\b/g, `new URL(${rel}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

const result = await build({
  metafile: true,
  absWorkingDir: ROOT, // so the metafile names inputs relative to the app root
  entryPoints: { cli: join(ROOT, 'server', 'cli.ts') },
  outdir: OUT,
  outExtension: { '.js': '.mjs' },
  // cli.ts imports serve.ts (fastify, the routes, the data plane) only for `serve`; split out,
  // that code sits in a chunk the `token` commands never read or compile.
  splitting: true,
  chunkNames: 'chunk-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  sourcemap: true,
  logLevel: 'warning',
  // `require` is what esbuild's CommonJS wrappers call for Node built-ins and optional packages.
  banner: {
    js: ["import { createRequire as __createRequire } from 'node:module';", 'const require = __createRequire(import.meta.url);'].join('\n'),
  },
  plugins: [sourceUrls],
});

// The project files the bundle was built from (every one, whatever folder it sits in): the
// launcher compares their times with the bundle's to know whether it is stale.
const inputs = Object.keys(result.metafile.inputs).filter((f) => !f.includes('node_modules/'));
writeFileSync(join(OUT, 'inputs.json'), JSON.stringify(inputs) + '\n');

console.log(`built dist/server/cli.mjs from ${inputs.length} project files`);
