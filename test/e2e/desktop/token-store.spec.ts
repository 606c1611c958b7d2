// The desktop app's token store (main/token-store.ts) says what really keeps the token and
// never downgrades silently: when the keychain cannot decrypt the stored owner token (reset,
// locked, or gone), main makes no new owner token, writes no plain-text copy, keeps the old
// file, and the window says what happened and what to do. On Linux, safeStorage's
// `basic_text` backend (a key fixed in Chromium) is named as such in Settings.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { openDatabase } from '../../../server/store/db.ts';
import { Store } from '../../../server/store/store.ts';
import { test, expect } from '../fixtures.ts';
import { AppPage } from '../pages.ts';

async function field(page: Page, label: string): Promise<string> {
  return (await page.locator('dl.kvs').getByText(label, { exact: true }).locator('xpath=following-sibling::dd[1]').innerText()).trim();
}

/** The embedded server's live (not revoked) owner tokens, read from its database. */
function ownerTokens(userData: string): number {
  const store = new Store(openDatabase(join(userData, 'server')));
  try {
    return store.listTokens().filter((t) => t.role === 'owner' && !t.revoked_at).length;
  } finally {
    store.db.close();
  }
}

test('a keychain that cannot decrypt the stored token: no new owner token, no plain file, the user is told', async ({ openEmbeddedDesktop }) => {
  test.setTimeout(120_000);
  const first = await openEmbeddedDesktop();
  await new AppPage(first.page).waitReady();
  const enc = join(first.userData, 'embedded.token.enc');
  const stored = readFileSync(enc);
  first.clickTray(['Quit']);
  expect(await first.exited).toBe(0);
  expect(ownerTokens(first.userData)).toBe(1);

  // The same keychain again: the same token, read back (no new one).
  const again = await openEmbeddedDesktop({ userData: first.userData });
  await new AppPage(again.page).waitReady();
  again.clickTray(['Quit']);
  expect(await again.exited).toBe(0);
  expect(ownerTokens(first.userData)).toBe(1);
  expect(readFileSync(enc).equals(stored)).toBe(true);

  // A reset keychain: the stored token cannot be decrypted.
  for (const opts of [{ keychainLost: true }, { encryptionAvailable: false }]) {
    const d = await openEmbeddedDesktop({ userData: first.userData, ...opts });
    const page = d.page;
    await expect(page.getByRole('heading', { name: 'The API token could not be read' })).toBeVisible();
    const alert = page.getByRole('alert').filter({ hasText: 'embedded.token.enc' });
    await expect(alert).toContainText('left unchanged');
    await expect(alert).toContainText('Unlock the system keychain');
    await expect(alert).toContainText('delete');
    d.clickTray(['Quit']);
    expect(await d.exited).toBe(0);
    expect(ownerTokens(first.userData), JSON.stringify(opts)).toBe(1);
    expect(readFileSync(enc).equals(stored), 'the encrypted file is kept as it was').toBe(true);
    expect(existsSync(join(first.userData, 'embedded.token')), 'no plain-text copy').toBe(false);
  }
});

test("Settings names safeStorage's basic_text backend: a fixed key, not a keychain", async ({ openEmbeddedDesktop }) => {
  test.skip(process.platform === 'win32' || process.platform === 'darwin', 'basic_text is the Linux fallback');
  const d = await openEmbeddedDesktop({ storageBackend: 'basic_text' });
  const app = new AppPage(d.page);
  await app.waitReady();
  await app.go('Settings');
  const storage = await field(d.page, 'Token storage');
  expect(storage).toMatch(/^stored with a fixed key: not protected by a keychain/);
  expect(storage).not.toMatch(/system keychain \(safeStorage\)/);
});
