// How the renderer's screens use the store, held by a test: they read it only through the named
// selectors of renderer/src/store/selectors.ts (`useStore(selectX)`, never an inline function,
// never useStore.getState()), and one component draws every QR code. That screens reach the
// platform only through the store is a layer rule (layers.test.ts), and so is "no import cycle".
// And the renderer's size rules: no source file over 300 lines, no function over 80 (measured on
// the syntax tree of oxc, the parser the build already uses through vite's rolldown).
import { test } from 'node:test';
import { parseAst } from 'rolldown/parseAst';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const SRC = resolve(import.meta.dirname, '..', '..', 'renderer', 'src');
const SCREENS = ['App.tsx', 'features', 'components'];

function* files(path: string): Generator<string> {
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) yield* files(join(path, name));
  else if (/\.tsx?$/.test(path)) yield path;
}

const screenFiles = () => SCREENS.flatMap((p) => [...files(join(SRC, p))]);

/** The ways a screen text reads the store other than through a named selector. */
export function inlineStoreReads(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/\buseStore\s*(\.\s*\w+|\(\s*[^)]{0,60})/g)) {
    const arg = m[1]!;
    if (/^\(\s*(select\w*|useShallow\(\s*select\w*)\s*[,()]/.test(arg + ')')) continue;
    found.push(m[0]);
  }
  return found;
}

test('screens read the store only through named selectors', () => {
  const problems = screenFiles().flatMap((f) => inlineStoreReads(readFileSync(f, 'utf8')).map((r) => `${relative(SRC, f)}: ${r}`));
  assert.deepEqual(problems, []);
});

test('the check tells a named selector from an inline one', () => {
  assert.deepEqual(inlineStoreReads('const a = useStore(selectPhase);'), []);
  assert.deepEqual(inlineStoreReads('const a = useStore(selectSession(id));'), []);
  assert.deepEqual(inlineStoreReads('useStore(useShallow(selectThings))'), []);
  assert.equal(inlineStoreReads('const a = useStore((s) => s.phase);').length, 1);
  assert.equal(inlineStoreReads('const a = useStore((st) => st.sessions[id]);').length, 1);
  assert.equal(inlineStoreReads('if (useStore.getState().sessions[id]) poll();').length, 1);
  assert.equal(inlineStoreReads('const a = useStore(pickPhase);').length, 1);
});

test('one component draws QR codes', () => {
  const drawing = [...files(SRC)].filter((f) => /from ['"]qrcode['"]/.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
  assert.deepEqual(drawing, ['components/Qr.tsx']);
});

const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 80;
const FUNCTION_NODES = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

/** Every function of a source text longer than `max` lines, as "name (lines)"; nested ones counted on their own too. */
export function longFunctions(text: string, lang: 'ts' | 'tsx', max = MAX_FUNCTION_LINES): string[] {
  const lineAt = (pos: number) => text.slice(0, pos).split('\n').length;
  const found: string[] = [];
  const walk = (node: unknown, name: string): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach((n) => walk(n, name));
    const n = node as { type?: string; start: number; end: number; id?: { name?: string }; key?: { name?: string } };
    if (n.type && FUNCTION_NODES.has(n.type)) {
      const lines = lineAt(n.end) - lineAt(n.start) + 1;
      if (lines > max) found.push(`${n.id?.name ?? name} (${lines})`);
    }
    const named = n.type === 'VariableDeclarator' ? n.id?.name : n.type === 'Property' || n.type === 'MethodDefinition' ? n.key?.name : undefined;
    for (const [k, v] of Object.entries(n)) if (k !== 'parent') walk(v, named ?? name);
  };
  walk(parseAst(text, { lang }), 'anonymous');
  return found;
}

test('no renderer source file over 300 lines, no function over 80', () => {
  const problems: string[] = [];
  for (const f of files(SRC)) {
    const text = readFileSync(f, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_FILE_LINES) problems.push(`${relative(SRC, f)}: ${lines} lines`);
    for (const fn of longFunctions(text, f.endsWith('.tsx') ? 'tsx' : 'ts')) problems.push(`${relative(SRC, f)}: function ${fn}`);
  }
  assert.deepEqual(problems, []);
});

test('the function measure counts every kind of function, nested ones on their own', () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
  assert.deepEqual(longFunctions(`function short() {\n${body(10)}\n}`, 'ts'), []);
  assert.deepEqual(longFunctions(`function long() {\n${body(80)}\n}`, 'ts'), ['long (82)']);
  assert.deepEqual(longFunctions(`const Comp = () => {\n${body(80)}\n  return <div />;\n};`, 'tsx'), ['Comp (83)']);
  assert.deepEqual(longFunctions(`const slice = {\n  method() {\n${body(80)}\n  },\n};`, 'ts'), ['method (82)']);
});
