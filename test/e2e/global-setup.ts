// Runs once before the tests: says plainly whether the electron project can run here.
import { electronBinary } from './electron-binary.ts';

export default function globalSetup(): void {
  const { path, reason } = electronBinary();
  if (path) console.log(`[electron] using ${path}`);
  else console.log(`[electron] project skipped: ${reason}. The web and desktop projects run the same specs in Chromium (desktop: the bundled main process with the electron stand-in).`);
}
