// Fixtures shared by the three projects. A worker owns one backend (the real server, in
// process); each test gets a page of the app pointed at it:
//   web      — a Chromium page in web mode (token in localStorage, as a person would paste it);
//   desktop  — the window of the desktop app run by test/e2e/desktop/harness.ts: the bundled
//              main process under Node with the `electron` stand-in, its window a Chromium page
//              running the real preload and renderer; one app per worker, own user-data folder,
//              aimed at the worker's backend through main's VPN_ACCESS_REMOTE_* variables;
//   electron — a window of the real Electron app (skipped where the binary is missing).
import { test as base, expect, _electron, type Page, type ElectronApplication } from '@playwright/test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, ROOT, type Backend } from './backend.ts';
import { AppPage } from './pages.ts';
import { electronBinary } from './electron-binary.ts';
import { launchDesktop, type DesktopApp, type LaunchOptions } from './desktop/harness.ts';

export { electronBinary };

type WorkerFixtures = {
  /**
   * A spec file that reads the customer's whole traffic (the dashboard's totals and top
   * clients) sets `test.use({ ownBackend: '<file>' })`: a worker-scoped option, so Playwright
   * runs that file in a worker of its own, with a backend (and desktop app) no other spec adds to.
   */
  ownBackend: string | null;
  backend: Backend;
  electronApp: ElectronApplication | null;
  desktopApp: DesktopApp | null;
};
type TestFixtures = {
  app: AppPage;
  appPage: Page;
  token: string;
  readClipboard: () => Promise<string>;
  /** The desktop app of this worker (desktop project only; null elsewhere). */
  desktop: DesktopApp | null;
  /**
   * A separate app window aimed at another backend or with another token, in the project's
   * own form (a web page, or a desktop app of its own); closed after the test.
   */
  openApp: (opts: { backend: Backend; token?: string }) => Promise<AppPage>;
  /** A desktop app of its own on its embedded server (no remote env); desktop project only. */
  openEmbeddedDesktop: (opts?: Omit<LaunchOptions, 'browser' | 'remote'>) => Promise<DesktopApp>;
};

export const test = base.extend<TestFixtures, WorkerFixtures>({
  ownBackend: [null, { scope: 'worker', option: true }],

  backend: [
    // `ownBackend` is read so that a file setting it gets a worker, and so a backend, of its own.
    async ({ ownBackend: _own }, use) => {
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

  desktopApp: [
    async ({ backend, browser }, use, workerInfo) => {
      if (workerInfo.project.name !== 'desktop') return use(null);
      const app = await launchDesktop({ browser, remote: { baseUrl: backend.baseUrl, token: backend.token } });
      await use(app);
      await app.quit();
    },
    { scope: 'worker' },
  ],

  token: async ({ backend }, use) => use(backend.token),

  desktop: async ({ desktopApp }, use) => use(desktopApp),

  appPage: async ({ page, electronApp, desktopApp, token, backend }, use, testInfo) => {
    if (testInfo.project.name === 'electron') {
      const { reason } = electronBinary();
      testInfo.skip(!electronApp, reason);
      const win = await electronApp!.firstWindow();
      await win.evaluate(() => (location.hash = '#/sessions'));
      await use(win);
      return;
    }
    if (desktopApp) {
      // The window may have been hidden to the tray by the test before: show it as the
      // tray's Open does, and start on the Sessions screen.
      if (!desktopApp.window.visible) desktopApp.clickTray(['Open VPN Access Desk']);
      const win = desktopApp.page;
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
  // main process in Electron (the window itself is not allowed to read the clipboard), and
  // through a page allowed to read it for the desktop stand-in (its window is not, either).
  readClipboard: async ({ appPage, electronApp, desktopApp }, use) => {
    await use(async () => {
      if (electronApp) return electronApp.evaluate(({ clipboard }) => clipboard.readText());
      if (desktopApp) return desktopApp.readClipboard();
      return appPage.evaluate(() => navigator.clipboard.readText());
    });
  },

  openApp: async ({ browser }, use, testInfo) => {
    const opened: Array<() => Promise<unknown>> = [];
    await use(async ({ backend, token }) => {
      if (testInfo.project.name === 'desktop') {
        const d = await launchDesktop({ browser, remote: { baseUrl: backend.baseUrl, token: token ?? backend.token } });
        opened.push(() => d.quit());
        return new AppPage(d.page);
      }
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      opened.push(() => ctx.close());
      const page = await ctx.newPage();
      await page.addInitScript((t) => {
        if (!localStorage.getItem('vpn-access.token')) localStorage.setItem('vpn-access.token', t);
      }, token ?? backend.token);
      await page.goto(backend.origin + '/');
      return new AppPage(page);
    });
    for (const close of opened.reverse()) await close().catch(() => {});
  },

  openEmbeddedDesktop: async ({ browser }, use, testInfo) => {
    const opened: DesktopApp[] = [];
    await use(async (opts = {}) => {
      if (testInfo.project.name !== 'desktop') throw new Error('openEmbeddedDesktop is for the desktop project');
      const d = await launchDesktop({ browser, ...opts });
      opened.push(d);
      return d;
    });
    for (const d of opened.reverse()) await d.quit().catch(() => {});
  },

  app: async ({ appPage }, use) => {
    await use(new AppPage(appPage));
  },
});

export { expect };
