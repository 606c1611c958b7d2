// Settings → Subscription page: the three fields by their accessible names, a clear message under
// a field the server would refuse (checked before sending), Save, the result in the API and on
// the subscription page a browser opens (announcement and "Get help"), clearing a field, an agent
// token's read-only view, and screenshots in light and dark at desktop and phone widths (no
// horizontal overflow, asserted): test-results/subscription-settings-*/<scheme>-<width>.png, and
// the subscription page with them at 390 px (page-390.png).
import { test, expect } from './fixtures.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { holdBack } from './slow-network.ts';
import type { Backend } from './backend.ts';
import type { AppPage } from './pages.ts';

const NONE = { support_url: null, profile_web_page_url: null, announce: null };
type Settings = { support_url: string | null; profile_web_page_url: string | null; announce: string | null; updated_at: string | null };

const reset = (backend: Backend) => backend.api('PATCH', '/subscription-settings', NONE);

/** Settings → Subscription page with nothing set, loaded (Save enabled); the card and its controls. */
async function openCard(app: AppPage, backend: Backend) {
  await reset(backend);
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  const card = page.getByRole('region', { name: 'Subscription page' });
  const save = card.getByRole('button', { name: 'Save' });
  await expect(save).toBeEnabled();
  const field = (name: string) => card.getByRole('textbox', { name });
  return { page, card, save, support: field('Support URL'), webPage: field('Profile web page'), announce: field('Announcement') };
}

test('edit, check, save and clear the subscription page settings; the page a browser opens shows them', async ({ app, backend, browser }, testInfo) => {
  const { page, card, support, webPage, announce, save } = await openCard(app, backend);
  await expect(support).toHaveValue('');

  // Refused before sending, each message under its field.
  await support.fill('t.me/acme_help');
  await announce.fill('x'.repeat(201));
  await save.click();
  await expect(support).toHaveAttribute('aria-invalid', 'true');
  await expect(support).toHaveAccessibleDescription(/starting with https:\/\/ or http:\/\//);
  await expect(announce).toHaveAccessibleDescription(/Up to 200 characters \(now 201\)/);
  expect((await backend.api<Settings>('GET', '/subscription-settings')).body.announce).toBeNull();

  // Fixed and saved.
  await support.fill('https://t.me/acme_help');
  await expect(support).toHaveAttribute('aria-invalid', 'false');
  await webPage.fill('https://acme.example/vpn');
  await announce.fill('Обслуживание в воскресенье 02:00 UTC');
  await expect(announce).toHaveAccessibleDescription(/36 of 200 characters/);
  await save.click();
  // While saving, the spinner is a status too: the one that says Saved.
  await expect(card.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();
  const saved = (await backend.api<Settings>('GET', '/subscription-settings')).body;
  expect(saved).toMatchObject({ support_url: 'https://t.me/acme_help', profile_web_page_url: 'https://acme.example/vpn', announce: 'Обслуживание в воскресенье 02:00 UTC' });

  // The page a client's browser opens.
  await backend.api('POST', '/sessions', { client_id: 'settings-page', zone: 'de-fra', reusable: true });
  const { body: sub } = await backend.api<{ url: string }>('PUT', '/subscriptions/settings-page');
  // A browser of its own (the desktop project's window may not leave the app).
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const subPage = await context.newPage();
  await subPage.goto(sub.url);
  await expect(subPage.getByRole('note', { name: 'Announcement' })).toHaveText('Обслуживание в воскресенье 02:00 UTC');
  await expect(subPage.getByRole('link', { name: 'Get help' })).toHaveAttribute('href', 'https://t.me/acme_help');
  const shot = testInfo.outputPath('page-390.png');
  await subPage.screenshot({ path: shot });
  await testInfo.attach('the page at 390 px', { path: shot, contentType: 'image/png' });
  await context.close();

  // Emptying a field clears it.
  await announce.fill('');
  await save.click();
  // (the first save's "Saved" may still show: the server's answer is what counts)
  await expect.poll(async () => (await backend.api<Settings>('GET', '/subscription-settings')).body.announce).toBeNull();
  await expect(card.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();
  expect((await backend.api<Settings>('GET', '/subscription-settings')).body).toMatchObject({ announce: null, support_url: 'https://t.me/acme_help' });
  await reset(backend);
});

test('what is typed while a save is on its way stays when the answer arrives', async ({ app, backend }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'in web mode the browser sends the PATCH itself, so it can be held back here');
  const { page, card, support, announce, save } = await openCard(app, backend);
  // The PATCH is held on its way (a slow network) while the person goes on typing.
  const held = await holdBack(page, '**/v2/subscription-settings', 'PATCH');
  await support.fill('  https://t.me/acme_help ');
  await save.click();
  await expect.poll(held.count).toBe(1);
  await announce.fill('Typed while saving');
  held.release();
  await expect(card.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();
  expect(held.count()).toBe(1);
  // The field sent shows the server's value (trimmed); the one typed since keeps its text, unsaved.
  await expect(support).toHaveValue('https://t.me/acme_help');
  await expect(announce).toHaveValue('Typed while saving');
  expect((await backend.api<Settings>('GET', '/subscription-settings')).body).toMatchObject({ support_url: 'https://t.me/acme_help', announce: null });
  await page.unroute('**/v2/subscription-settings');
  await reset(backend);
});

test('an agent token sees the settings read-only', async ({ openApp, backend }) => {
  await backend.api('PATCH', '/subscription-settings', { support_url: 'https://t.me/acme_help' });
  const agent = await openApp({ backend, token: backend.newToken('agent') });
  await agent.waitReady();
  await agent.go('Settings');
  const card = agent.page.getByRole('region', { name: 'Subscription page' });
  await expect(card.getByRole('textbox', { name: 'Support URL' })).toHaveValue('https://t.me/acme_help');
  await expect(card.getByRole('textbox', { name: 'Support URL' })).not.toBeEditable();
  await expect(card.getByRole('button', { name: 'Save' })).toBeDisabled();
  await expect(card.getByText('Only an owner token can change these.')).toBeVisible();
  await reset(backend);
});

test('screenshots of Settings → Subscription page, light and dark', async ({ app, backend }, testInfo) => {
  await backend.api('PATCH', '/subscription-settings', { support_url: 'https://t.me/acme_help', announce: 'Maintenance on Sunday, 02:00–03:00 UTC.' });
  const page = app.page;
  // The desktop project keeps its window between tests: start at the desktop width.
  await page.setViewportSize({ width: 1280, height: 800 });
  await app.waitReady();
  for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
    await page.setViewportSize(viewport);
    await app.go('Settings');
    const card = page.getByRole('region', { name: 'Subscription page' });
    await expect(card.getByRole('textbox', { name: 'Support URL' })).toHaveValue('https://t.me/acme_help');
    await card.getByRole('textbox', { name: 'Profile web page' }).fill('not a url');
    await card.getByRole('button', { name: 'Save' }).click();
    await expect(card.getByRole('textbox', { name: 'Profile web page' })).toHaveAttribute('aria-invalid', 'true');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, 'no horizontal overflow').toBeLessThanOrEqual(0);
    if (viewport.width < 768) {
      // On a phone the top bar stays over the page: the card's top just below it, the screen as seen.
      await card.evaluate((el) => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 64));
      await page.waitForTimeout(150);
      await picturesInBothSchemes(page, testInfo, `${viewport.width}`, { take: (path) => page.screenshot({ path }) });
    } else {
      await card.scrollIntoViewIfNeeded();
      await page.waitForTimeout(150);
      await picturesInBothSchemes(page, testInfo, `${viewport.width}`, { take: (path) => card.screenshot({ path }) });
    }
    // The unsaved change goes: Sessions, then Settings again, loads the card afresh.
    await app.go('Sessions');
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await reset(backend);
});
