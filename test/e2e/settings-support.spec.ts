// Settings → Support: Copy API token puts this window's token on the clipboard (in the desktop
// app main does it, the page never holds the token); Open the OpenAPI document shows the API's
// OpenAPI 3.1 document, the same as GET /v2/openapi.json, and Download openapi.json saves it. In
// web mode, Use another token forgets the stored token and goes back to the sign-in screen.
import { test, expect } from './fixtures.ts';

test('Copy API token, Open the OpenAPI document and Download openapi.json', async ({ app, backend, readClipboard, desktop }, testInfo) => {
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  const card = page.getByRole('region', { name: 'Support' });
  await card.getByRole('button', { name: 'Copy API token' }).click();
  // The desktop app's main writes the system clipboard (the stand-in keeps what it wrote); a page, the browser's.
  await expect.poll(async () => (desktop ? desktop.state.clipboardWrites.at(-1) : await readClipboard())).toBe(backend.token);

  await card.getByRole('button', { name: 'Open the OpenAPI document' }).click();
  const doc = card.getByRole('region', { name: 'OpenAPI document' });
  await expect(doc).toContainText('"openapi": "3.1');
  const shown = JSON.parse((await doc.textContent()) ?? '') as { openapi: string; paths: Record<string, unknown> };
  const { body: served } = await backend.api<{ paths: Record<string, unknown> }>('GET', '/openapi.json');
  expect(Object.keys(shown.paths).sort()).toEqual(Object.keys(served.paths).sort());
  expect(shown.paths).toHaveProperty(['/v2/sessions/{id}/status']);

  // Real Electron answers a download with its Save dialog, which a test cannot click; the web and desktop projects check the file.
  if (testInfo.project.name === 'electron') return;
  const [download] = await Promise.all([page.waitForEvent('download'), card.getByRole('button', { name: 'Download openapi.json' }).click()]);
  expect(download.suggestedFilename()).toBe('openapi.json');
  const saved = JSON.parse(await (await download.createReadStream()).toArray().then((c) => Buffer.concat(c).toString('utf8'))) as { openapi: string };
  expect(saved.openapi).toBe(shown.openapi);
});

test('web mode: Use another token forgets the stored token and asks for one', async ({ app }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'web mode only: the desktop window keeps its token in main, not in the page');
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  await page.getByRole('button', { name: 'Use another token' }).click();
  await expect(page.getByRole('textbox', { name: 'API token' })).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem('vpn-access.token'))).toBeNull();
});
