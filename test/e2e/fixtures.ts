// Fixtures shared by both projects. A worker owns one backend (the real server, in process);
// each test gets a fresh page of the app pointed at it: a Chromium page in web mode, or a
// window of the real Electron app (own user-data folder per worker) in the electron project.
import { test as base, expect, _electron, type Page, type ElectronApplication } from '@playwright/test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, ROOT, type Backend } from './backend.ts';
import { AppPage } from './pages.ts';

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

type WorkerFixtures = { backend: Backend; electronApp: ElectronApplication | null };
type TestFixtures = { app: AppPage; appPage: Page; token: string };

export const test = base.extend<TestFixtures, WorkerFixtures>({
  backend: [
    async ({}, use) => {
      const b = await startBackend();
      await use(b);
      await b.stop();
    },
    { scope: 'worker' },
  ],

  electronApp: [
    async ({ backend }, use, workerInfo) => {
      if (workerInfo.project.name !== 'electron') return use(null);
      const { path } = electronBinary();
      if (!path) return use(null);
      const userData = mkdtempSync(join(tmpdir(), 'vad-electron-'));
      const app = await _electron.launch({
        executablePath: path,
        args: [join(ROOT, 'dist', 'main', 'index.cjs'), `--user-data-dir=${userData}`],
        env: { ...process.env, VPN_ACCESS_REMOTE_URL: backend.baseUrl, VPN_ACCESS_REMOTE_TOKEN: backend.token, VPN_ACCESS_E2E: '1' },
      });
      await use(app);
      await app.close();
      rmSync(userData, { recursive: true, force: true });
    },
    { scope: 'worker' },
  ],

  token: async ({ backend }, use) => use(backend.token),

  appPage: async ({ page, electronApp, token, backend }, use, testInfo) => {
    if (testInfo.project.name === 'electron') {
      const { reason } = electronBinary();
      testInfo.skip(!electronApp, reason);
      const win = await electronApp!.firstWindow();
      await win.evaluate(() => (location.hash = '#/sessions'));
      await use(win);
      return;
    }
    await page.addInitScript((t) => {
      if (t && !localStorage.getItem('vpn-access.token')) localStorage.setItem('vpn-access.token', t);
    }, token);
    await page.goto(backend.origin + '/');
    await use(page);
  },

  app: async ({ appPage }, use) => {
    await use(new AppPage(appPage));
  },
});

export { expect };
