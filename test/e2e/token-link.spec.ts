// Web mode: a `#token=` link never silently replaces the token this browser keeps (a crafted
// link could otherwise sign support staff into another customer). It asks first, naming the
// customer and role of both tokens (from GET /v2/server-info's `token` extension), and the
// header always says whom the page is signed in as.
import { test, expect } from './fixtures.ts';
import { axeViolations } from './axe.ts';
import { AppPage } from './pages.ts';

const stored = (page: import('@playwright/test').Page) => page.evaluate(() => localStorage.getItem('vpn-access.token'));

test('a #token= link asks before it replaces the stored token, naming both customers', async ({ page, backend }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'web mode only: the desktop window has no address and never holds a token');
  const other = backend.server.services.sqlite!.store.createToken('globex-support', 'agent').token;
  const link = (t: string) => `${backend.origin}/#token=${encodeURIComponent(t)}`;

  // No token kept yet: the link's token is taken (nothing to replace), and the header names it.
  await page.goto(link(backend.token));
  const app = new AppPage(page);
  await expect(app.nav('Sessions')).toBeVisible();
  await expect(page.getByRole('banner').getByText('default (owner)')).toBeVisible();
  expect(await stored(page)).toBe(backend.token);

  // A link with another customer's token, opened in a new tab of the same browser: asked first.
  const tab = await page.context().newPage();
  await tab.goto(link(other));
  const dialog = tab.getByRole('dialog', { name: 'Replace the stored API token?' });
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText('globex-support (agent)');
  await expect(dialog).toContainText('default (owner)');
  const found = await axeViolations(tab, 'asked to replace the token');
  expect(found, found.join('\n')).toEqual([]);
  expect(tab.url()).not.toContain(other);
  expect(await stored(tab)).toBe(backend.token);
  await expect(tab.getByRole('banner').getByText('default (owner)')).toBeVisible();
  await dialog.getByRole('button', { name: 'Keep the current token' }).click();
  await expect(dialog).toHaveCount(0);
  expect(await stored(tab)).toBe(backend.token);

  // The same link in the running page (a same-document hash change): asked too.
  await tab.evaluate((t) => void (location.hash = `#token=${encodeURIComponent(t)}`), other);
  await expect(dialog).toBeVisible();
  await dialog.getByRole('button', { name: 'Use the new token' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(tab.getByRole('banner').getByText('globex-support (agent)')).toBeVisible();
  expect(await stored(tab)).toBe(other);
  await new AppPage(tab).go('Settings');
  await expect(tab.locator('dl.kvs').getByText('globex-support (agent)')).toBeVisible();

  // A link whose token the server refuses replaces nothing and says so.
  await tab.goto(link('vad_not-a-real-token-at-all'));
  await expect(tab.getByText('The token in the link was not accepted by the server')).toBeVisible();
  await expect(dialog).toHaveCount(0);
  expect(await stored(tab)).toBe(other);
  await tab.close();
});
