// A package the server loads on first use (`await import('pkg')`) is read through `default`: in the
// server bundle (scripts/build-server.ts) such a package sits in a chunk of its own, and a CommonJS
// one (selfsigned, yaml, qrcode, @fastify/static) has only a default export there, its
// module.exports; the named exports Node's own loader adds are missing, so a named one is
// undefined in the bundle alone. Node built-ins (`node:`) keep their names.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/server.ts';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

test('every dynamic import of a package in server/ reads its default export', () => {
  const found: string[] = [];
  const wrong: string[] = [];
  for (const file of sources(join(ROOT, 'server'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(\{\s*default\b[^}]*\}\s*=\s*)?(\(?)await import\('([^.'][^']*)'\)(\)\.default\b)?/g)) {
      const [, destructured, , spec, dotDefault] = m;
      if (spec.startsWith('node:')) continue;
      found.push(spec);
      if (!destructured && !dotDefault) wrong.push(`${relative(ROOT, file)}: import('${spec}')`);
    }
  }
  assert.ok(found.length >= 4, `the scan finds the lazy imports (${found.join(', ')})`);
  assert.deepEqual(wrong, []);
});
