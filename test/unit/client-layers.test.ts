// The desktop app's layers, checked from the import statements: main, preload and renderer
// never import each other; what they share sits in common/, which imports neither Node nor
// Electron nor the UI libraries (both tsconfigs check it, and both sides bundle it). A new
// import across these lines fails here, naming the file and the import.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Rule {
  /** Folders of ours this layer may import from (repo-relative prefixes). */
  ours: string[];
  /** Whether `node:` built-ins may be imported. */
  node: boolean;
  /** Packages this layer may import; '*' for any. */
  packages: string[] | '*';
}

const RULES: Record<string, Rule> = {
  common: { ours: ['common/', 'server/contract/'], node: false, packages: ['eventsource'] },
  preload: { ours: ['common/'], node: false, packages: ['electron'] },
  main: { ours: ['main/', 'common/', 'server/contract/', 'server/serve.ts'], node: true, packages: '*' },
  renderer: { ours: ['renderer/', 'common/', 'server/contract/'], node: false, packages: ['react', 'react-dom', 'zustand', 'eventsource', 'qrcode', '@tanstack/react-virtual'] },
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const rel = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(rel));
    else if (/\.(ts|tsx)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every module specifier a file names: static imports and exports, side-effect imports, import(). */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [/\bfrom\s+['"]([^'"]+)['"]/g, /\bimport\s+['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const re of patterns) for (const m of text.matchAll(re)) found.push(m[1]);
  return found;
}

function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The import's breach of the rule, or null when it is allowed. */
function breach(file: string, spec: string, rule: Rule): string | null {
  if (spec.startsWith('node:')) return rule.node ? null : 'imports a Node built-in';
  if (spec.startsWith('.')) {
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec));
    return rule.ours.some((p) => target === p || target.startsWith(p)) ? null : `imports ${target}`;
  }
  if (rule.packages === '*') return null;
  const name = packageName(spec);
  return rule.packages.includes(name) ? null : `imports the package ${name}`;
}

test('main, preload, renderer and common import only across the allowed lines', () => {
  const breaches: string[] = [];
  let checked = 0;
  for (const [layer, rule] of Object.entries(RULES)) {
    for (const file of sourceFiles(layer)) {
      checked++;
      for (const spec of specifiers(readFileSync(join(ROOT, file), 'utf8'))) {
        const why = breach(file, spec, rule);
        if (why) breaches.push(`${file}: ${why} ('${spec}')`);
      }
    }
  }
  assert.ok(checked > 40, `found the source files (${checked})`);
  assert.deepEqual(breaches, []);
});

test('the check catches what it should', () => {
  assert.equal(breach('main/index.ts', '../renderer/src/platform/web.ts', RULES.main), 'imports renderer/src/platform/web.ts');
  assert.equal(breach('renderer/src/store/index.ts', '../../../preload/index.ts', RULES.renderer), 'imports preload/index.ts');
  assert.equal(breach('renderer/src/App.tsx', 'node:fs', RULES.renderer), 'imports a Node built-in');
  assert.equal(breach('common/event-stream.ts', 'electron', RULES.common), 'imports the package electron');
  assert.equal(breach('preload/index.ts', '../main/ipc.ts', RULES.preload), 'imports main/ipc.ts');
  assert.equal(breach('renderer/src/App.tsx', '../../server/app.ts', RULES.renderer), 'imports server/app.ts');
  assert.equal(breach('main/endpoint.ts', '../server/serve.ts', RULES.main), null);
  assert.equal(breach('renderer/src/platform/web.ts', '../../../common/event-stream.ts', RULES.renderer), null);
  assert.deepEqual(specifiers(`import a from 'x';\nimport type { B } from "y";\nexport { c } from './z.ts';\nimport './side.css';\nconst d = await import('w');`).sort(), ['./side.css', './z.ts', 'w', 'x', 'y']);
});
