// The remote endpoint and its token (main/endpoint.ts): the stored token only ever goes to the
// URL it was entered for. The renderer cannot point it at another server (a changed base URL
// needs its token again, refused by main with 400 otherwise), and plain http beyond this
// computer sends the token unencrypted, so main refuses it unless the user confirmed it
// explicitly (a checkbox with a warning on the Settings screen).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from '../fixtures.ts';
import { AppPage } from '../pages.ts';

type Answer = { ok: boolean; value?: { baseUrl: string; mode: string }; error?: { status: number; code: string; message: string } };
type Bridge = { app: { saveConnection(s: unknown): Promise<Answer>; connectionInfo(): Promise<Answer> } };

test('a changed remote URL needs its token again, and plain http beyond loopback needs a confirmation', async ({ backend, openEmbeddedDesktop }) => {
  const d = await openEmbeddedDesktop();
  const app = new AppPage(d.page);
  const page = d.page;
  await app.waitReady();
  const save = (s: unknown) => page.evaluate((x) => (window as unknown as Bridge).app.saveConnection(x), s);
  const safe = d.electron.safeStorage as { decryptString(b: Buffer): string };
  const storedToken = () => safe.decryptString(readFileSync(join(d.userData, 'remote.token.enc')));

  // The first remote endpoint, with its token.
  expect(await save({ mode: 'remote', remoteBaseUrl: backend.baseUrl, remoteToken: backend.token })).toMatchObject({ ok: true, value: { baseUrl: backend.baseUrl } });
  // The same URL again without a token keeps the stored one (written the same, or with a trailing slash).
  expect(await save({ mode: 'remote', remoteBaseUrl: `${backend.baseUrl}/` })).toMatchObject({ ok: true, value: { baseUrl: backend.baseUrl } });

  // A page that tries to send the stored token elsewhere: refused, nothing changes.
  const elsewhere = backend.baseUrl.replace('127.0.0.1', 'localhost');
  const moved = await save({ mode: 'remote', remoteBaseUrl: elsewhere });
  expect(moved).toMatchObject({ ok: false, error: { status: 400, code: 'invalid_request' } });
  expect(moved.error!.message).toMatch(/token/i);
  expect((await page.evaluate(() => (window as unknown as Bridge).app.connectionInfo())).value?.baseUrl).toBe(backend.baseUrl);
  expect(storedToken()).toBe(backend.token);
  // Going to the embedded server and back to another URL does not carry the token over either.
  expect((await save({ mode: 'embedded' })).ok).toBe(true);
  expect(await save({ mode: 'remote', remoteBaseUrl: elsewhere })).toMatchObject({ ok: false, error: { status: 400 } });

  // Plain http to a machine other than this one: refused without the explicit confirmation.
  for (const url of ['http://192.168.1.20:8787/v2', 'http://vpn.example.com/v2', 'http://[fd00::1]:8787/v2']) {
    const plain = await save({ mode: 'remote', remoteBaseUrl: url, remoteToken: 'vad_something' });
    expect(plain, url).toMatchObject({ ok: false, error: { status: 400, code: 'invalid_request' } });
    expect(plain.error!.message).toMatch(/https/);
  }
  // Credentials in the URL are refused too.
  expect(await save({ mode: 'remote', remoteBaseUrl: 'https://user:pw@vpn.example.com/v2', remoteToken: 'x' })).toMatchObject({ ok: false, error: { status: 400 } });
  expect(storedToken()).toBe(backend.token);

  // The Settings screen: a changed URL asks for the token; an http URL beyond loopback shows
  // the warning and its checkbox.
  await app.go('Settings');
  await page.getByLabel('Remote server').check();
  await page.getByLabel('Base URL').fill('http://192.168.1.20:8787/v2');
  await expect(page.getByRole('note').filter({ hasText: /sent unencrypted/ })).toBeVisible();
  const confirm = page.getByRole('checkbox', { name: /plain http/i });
  await expect(confirm).not.toBeChecked();
  await page.getByRole('textbox', { name: 'API token' }).fill('vad_typed');
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await expect(page.getByRole('alert').filter({ hasText: /https/ })).toBeVisible();
  await page.getByLabel('Base URL').fill(elsewhere);
  await expect(page.getByRole('note').filter({ hasText: /sent unencrypted/ })).toHaveCount(0);
  await page.getByRole('textbox', { name: 'API token' }).fill('');
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await expect(page.getByRole('alert').filter({ hasText: /token/i })).toBeVisible();
  expect(storedToken()).toBe(backend.token);
});
