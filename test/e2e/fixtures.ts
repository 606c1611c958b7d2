// Fixtures shared by both projects. A worker owns one backend (the real server, in process);
// each test gets a fresh page of the app pointed at it: a Chromium page in web mode, or a
// window of the real Electron app (own user-data folder per worker) in the electron project.
import { test as base, expect, _electron, type Page, type ElectronApplication } from '@playwright/test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, ROOT, type Backend } from './backend.ts';
import { AppPage } from './pages.ts';
import { electronBinary } from './electron-binary.ts';

export { electronBinary };

type WorkerFixtures = { backend: Backend; electronApp: ElectronApplication | null };
type TestFixtures = { app: AppPage; appPage: Page; token: string; readClipboard: () => Promise<string> };

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

  // The system clipboard as the app wrote it: through the page in Chromium, through the
  // main process in Electron (the window itself is not allowed to read the clipboard).
  readClipboard: async ({ appPage, electronApp }, use) => {
    await use(async () =>
      electronApp ? electronApp.evaluate(({ clipboard }) => clipboard.readText()) : appPage.evaluate(() => navigator.clipboard.readText()),
    );
  },

  app: async ({ appPage }, use) => {
    await use(new AppPage(appPage));
  },
});

export { expect };
