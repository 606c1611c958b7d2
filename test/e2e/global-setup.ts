// Runs once before the tests: says plainly whether the electron project can run here.
import { electronBinary } from './electron-binary.ts';

export default function globalSetup(): void {
  const { path, reason } = electronBinary();
  if (path) console.log(`[electron] using ${path}`);
  else console.log(`[electron] project skipped: ${reason}. The web project runs the same specs in Chromium.`);
}
