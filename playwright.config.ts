// End-to-end tests: the same specs and page objects run in three projects.
//   web      — Debian Chromium against web mode (the server serves the built renderer).
//   desktop  — the desktop app without Electron's binary, on every machine: the bundled main
//              process under Node with the `electron` stand-in of test/e2e/desktop/, its window
//              a Chromium page running the real preload and the renderer from file://. Also
//              runs the desktop-only specs (test/e2e/desktop/*.spec.ts: tray, notifications,
//              single instance, token isolation, endpoint switch).
//   electron — the real desktop app via _electron.launch; skipped, with the reason shown,
//              where the Electron binary is not installed.
import { defineConfig } from '@playwright/test';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export default defineConfig({
  testDir: 'test/e2e',
  testMatch: '**/*.spec.ts',
  outputDir: 'test-results',
  globalSetup: './test/e2e/global-setup.ts',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: process.env.CI ? 2 : 2,
  retries: 0,
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]],
  use: {
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    actionTimeout: 10_000,
  },
  projects: [
    {
      name: 'web',
      testIgnore: 'desktop/**',
      use: {
        browserName: 'chromium',
        launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS },
        permissions: ['clipboard-read', 'clipboard-write'],
        viewport: { width: 1280, height: 800 },
      },
    },
    {
      name: 'desktop',
      use: {
        browserName: 'chromium',
        // Electron lets its file:// pages load module scripts from file://; Chromium needs
        // --allow-file-access-from-files for the renderer's <script type="module">.
        launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: [...CHROMIUM_ARGS, '--allow-file-access-from-files'] },
        viewport: { width: 1280, height: 800 },
      },
    },
    {
      name: 'electron',
      testIgnore: 'desktop/**',
      // The browser settings only matter for the unused default `page` fixture.
      use: {
        viewport: { width: 1280, height: 800 },
        launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS },
      },
    },
  ],
});
