import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** Where the Electron binary would be; null (with the reason) when it is not installed. */
export function electronBinary(): { path: string | null; reason: string } {
  const dir = join(ROOT, 'node_modules', 'electron');
  const pathTxt = join(dir, 'path.txt');
  if (!existsSync(pathTxt)) return { path: null, reason: 'Electron binary is missing (node_modules/electron/path.txt is absent: the Electron download is not available on this machine)' };
  const bin = join(dir, 'dist', readFileSync(pathTxt, 'utf8').trim());
  if (!existsSync(bin)) return { path: null, reason: `Electron binary is missing (${bin} does not exist)` };
  if (!existsSync(join(ROOT, 'dist', 'main', 'index.cjs'))) return { path: null, reason: 'dist/main/index.cjs is missing: run `npm run build`' };
  return { path: bin, reason: '' };
}
