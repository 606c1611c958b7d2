// The desktop app on its own embedded server (no remote env at all): the server starts in
// main, its owner token is kept encrypted (or, with no keychain, in a 0600 file) and never
// shown; Settings switches the app to a remote server and back, each showing its own
// sessions; Quit from the tray stops the embedded server and frees the single-instance
// lock, and a restart finds the same server, port and sessions again.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect } from '../fixtures.ts';
import { AppPage } from '../pages.ts';

/** A field of the Settings screen's Connection card. */
async function field(page: Page, label: string): Promise<string> {
  return (await page.locator('dl.kvs').getByText(label, { exact: true }).locator('xpath=following-sibling::dd[1]').innerText()).trim();
}

test('the embedded server, a switch to a remote server and back, quit and restart', async ({ backend, openEmbeddedDesktop }) => {
  test.setTimeout(90_000);
  const d = await openEmbeddedDesktop();
  const app = new AppPage(d.page);
  const page = d.page;
  await app.waitReady();
  await app.go('Settings');
  expect(await field(page, 'Mode')).toBe('Embedded server');
  expect(await field(page, 'Data folder')).toBe(join(d.userData, 'server'));
  expect(await field(page, 'Token storage')).toBe('encrypted with the system keychain (safeStorage)');
  const embeddedUrl = await field(page, 'API base URL');
  expect(embeddedUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v2$/);

  // The owner token is on disk only as safeStorage ciphertext, readable by this user only.
  const enc = join(d.userData, 'embedded.token.enc');
  expect(existsSync(join(d.userData, 'embedded.token'))).toBe(false);
  expect(statSync(enc).mode & 0o777).toBe(0o600);
  const safe = d.electron.safeStorage as { decryptString(b: Buffer): string };
  const token = safe.decryptString(readFileSync(enc));
  expect(token.length).toBeGreaterThan(20);
  expect(readFileSync(enc).includes(Buffer.from(token))).toBe(false);
  const embeddedApi = (path: string) => fetch(embeddedUrl + path, { headers: { Authorization: `Bearer ${token}` } });

  // A session made in the window lives on the embedded server.
  const local = await app.createSession({ clientId: 'embedded-erin', reusable: true });
  expect((await embeddedApi(`/sessions/${local}`)).status).toBe(200);
  expect((await backend.api('GET', `/sessions/${local}`)).status).toBe(404);

  // Switch to the remote server in Settings.
  await app.go('Settings');
  await page.getByLabel('Remote server').check();
  await page.getByLabel('Base URL').fill(backend.baseUrl);
  await page.getByRole('textbox', { name: 'API token' }).fill(backend.token);
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await expect(app.nav('Sessions')).toBeVisible();
  await app.go('Settings');
  expect(await field(page, 'Mode')).toBe('Remote server');
  expect(await field(page, 'API base URL')).toBe(backend.baseUrl);
  expect(existsSync(join(d.userData, 'remote.token.enc'))).toBe(true);
  expect(safe.decryptString(readFileSync(join(d.userData, 'remote.token.enc')))).toBe(backend.token);
  await app.go('Sessions');
  await expect(page.getByRole('row', { name: /embedded-erin/ })).toHaveCount(0);
  const remote = await app.createSession({ clientId: 'remote-frank', reusable: true });
  expect((await backend.api('GET', `/sessions/${remote}`)).status).toBe(200);
  expect((await embeddedApi(`/sessions/${remote}`)).status).toBe(404);

  // And back to the embedded server: its sessions again, not the remote one's.
  await app.go('Settings');
  await page.getByLabel('Embedded server on this computer').check();
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await expect(app.nav('Sessions')).toBeVisible();
  await app.go('Settings');
  expect(await field(page, 'Mode')).toBe('Embedded server');
  expect(await field(page, 'API base URL')).toBe(embeddedUrl);
  await app.go('Sessions');
  await expect(page.getByRole('row', { name: /embedded-erin/ })).toBeVisible();
  await expect(page.getByRole('row', { name: /remote-frank/ })).toHaveCount(0);

  // Quit from the tray: main stops the embedded server and releases the lock.
  d.clickTray(['Quit']);
  expect(await d.exited).toBe(0);
  await expect(embeddedApi('/zones')).rejects.toThrow();
  expect(existsSync(join(d.userData, 'SingletonLock'))).toBe(false);

  // A restart on the same folder: the same server on the same port, with its sessions.
  const again = await openEmbeddedDesktop({ userData: d.userData });
  const app2 = new AppPage(again.page);
  await app2.waitReady();
  await app2.go('Settings');
  expect(await field(again.page, 'API base URL')).toBe(embeddedUrl);
  await app2.go('Sessions');
  await expect(again.page.getByRole('row', { name: /embedded-erin/ })).toBeVisible();
});

test('with no system keychain the token is kept in a file only this user can read', async ({ openEmbeddedDesktop }) => {
  const d = await openEmbeddedDesktop({ encryptionAvailable: false });
  const app = new AppPage(d.page);
  await app.waitReady();
  await app.go('Settings');
  expect(await field(d.page, 'Token storage')).toBe('plain file readable only by you (0600): no system keychain available');
  const file = join(d.userData, 'embedded.token');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(existsSync(`${file}.enc`)).toBe(false);
  const token = readFileSync(file, 'utf8').trim();
  const url = await field(d.page, 'API base URL');
  expect((await fetch(`${url}/zones`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
});
