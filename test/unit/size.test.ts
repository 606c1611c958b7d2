// Size limits of the source, held by a test: no source file over 300 lines, no function over 80
// (declarations, methods, arrow functions and function expressions alike). Functions are found by
// a real parser (oxc-parser), not by counting braces, so strings, comments, regular expressions
// and JSX cannot fool it. A file over a limit is split into modules with one job each; a long
// function into named parts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { parseSync } from 'oxc-parser';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const MAX_FILE_LINES = 300;
export const MAX_FUNCTION_LINES = 80;

/** The folders whose source is held to the limits: the server, the renderer, the desktop main process and preload, shared code, the CLI and build scripts. */
const ROOTS = ['server', 'renderer/src', 'main', 'preload', 'common', 'electron', 'bin', 'scripts'];
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs|jsx)$/;
const SKIP = new Set(['node_modules', 'dist', 'release']);


function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir).sort()) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

/** The 1-based line of each offset of a text, by binary search over the line starts. */
function lineOf(text: string): (offset: number) => number {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

interface Node {
  type: string;
  start: number;
  end: number;
  [key: string]: unknown;
}

const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && typeof (value as Node).type === 'string';

/** A readable name for a function: its own, or the variable, property or method it is assigned to. */
function nameOf(fn: Node, parent: Node | undefined): string {
  const id = (node: unknown): string | undefined => {
    if (!isNode(node)) return undefined;
    if (node.type === 'Identifier' || node.type === 'PrivateIdentifier') return String(node.name);
    if (node.type === 'Literal') return String(node.value);
    return undefined;
  };
  return (
    id(fn.id) ??
    (parent && (id(parent.id) ?? id(parent.key) ?? (parent.type === 'AssignmentExpression' ? id((parent.left as Node).property ?? parent.left) : undefined))) ??
    '(anonymous)'
  );
}

export interface Offence {
  file: string;
  what: string;
}

/** Every function of a parsed program longer than the limit, with its name, first line and length. */
function longFunctions(program: Node, line: (offset: number) => number, file: string): Offence[] {
  const out: Offence[] = [];
  const visit = (node: Node, parent: Node | undefined): void => {
    if (FUNCTIONS.has(node.type)) {
      // A method's span starts at its key (`async name(...)`), a function's at itself.
      const start = parent?.type === 'MethodDefinition' ? parent.start : node.start;
      const lines = line(node.end) - line(start) + 1;
      if (lines > MAX_FUNCTION_LINES) out.push({ file, what: `function ${nameOf(node, parent)} (line ${line(start)}) has ${lines} lines` });
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'parent') continue;
      if (Array.isArray(value)) for (const child of value) isNode(child) && visit(child, node);
      else if (isNode(value)) visit(value, node);
    }
  };
  visit(program, undefined);
  return out;
}

/** What is over a limit in one source file: its length, then each long function. */
export function offences(file: string, text: string): Offence[] {
  const out: Offence[] = [];
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_FILE_LINES) out.push({ file, what: `has ${lines} lines` });
  const parsed = parseSync(file, text);
  if (parsed.errors.length > 0) {
    out.push({ file, what: `does not parse: ${parsed.errors[0]!.message}` });
    return out;
  }
  return [...out, ...longFunctions(parsed.program as unknown as Node, lineOf(text), file)];
}

/** Every offence under the roots, by file path from the repository root. */
function scan(): Offence[] {
  const out: Offence[] = [];
  for (const root of ROOTS) {
    if (!existsSync(join(ROOT, root))) continue;
    for (const path of sources(join(ROOT, root))) {
      out.push(...offences(relative(ROOT, path).split(sep).join('/'), readFileSync(path, 'utf8')));
    }
  }
  return out;
}

test('no source file over 300 lines and no function over 80 lines', () => {
  const found = scan();
  const offending = found.map((o) => `${o.file}: ${o.what}`);
  assert.deepEqual(offending, [], 'split each file into modules with one job each, each function into named parts');
});

test('the size check counts lines of files and of every kind of function, and ignores braces in strings', () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = '}}{{';`).join('\n');
  assert.deepEqual(offences('a.ts', `function ok() {\n${body(78)}\n}\n`), []);
  const long = `function f() {\n${body(79)}\n}\nconst g = () => {\n${body(79)}\n};\nclass C {\n  m() {\n${body(79)}\n  }\n}\nconst o = { p: function () {\n${body(79)}\n} };\n`;
  assert.deepEqual(
    offences('b.ts', long).map((o) => o.what),
    ['has 326 lines', 'function f (line 1) has 81 lines', 'function g (line 82) has 81 lines', 'function m (line 164) has 81 lines', 'function p (line 246) has 81 lines'],
  );
  const file = Array.from({ length: 301 }, (_, i) => `export const c${i} = ${i};`).join('\n') + '\n';
  assert.deepEqual(offences('c.ts', file).map((o) => o.what), ['has 301 lines']);
  assert.deepEqual(offences('d.tsx', 'export const A = () => <div>{"}"}</div>;\n'), []);
});
