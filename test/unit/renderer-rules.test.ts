// How the renderer's screens use the store, held by a test: they read it only through the named
// selectors of renderer/src/store/selectors.ts (`useStore(selectX)`, never an inline function,
// never useStore.getState()), and one component draws every QR code. That screens reach the
// platform only through the store is a layer rule (layers.test.ts), and so is "no import cycle".
// The size rules (300 lines a file, 80 a function) are test/unit/size.test.ts's, for the renderer too.
import { test } from 'node:test';
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

