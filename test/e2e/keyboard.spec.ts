// Full keyboard use: navigation, the create form, the limits tabs and the session list.
import { test, expect } from './fixtures.ts';

test('the app works from the keyboard alone', async ({ app, backend }) => {
  const page = app.page;
  await backend.api('POST', '/sessions', { client_id: 'kb-first', zone: 'de-fra' });
  await backend.api('POST', '/sessions', { client_id: 'kb-second', zone: 'de-fra' });
  await app.waitReady();

  // Tab reaches the navigation; Enter follows a link. Focus may start anywhere (the desktop
  // window is kept between tests), so Tab goes on round the page until it gets there.
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press('Tab');
    if (await app.nav('New session').evaluate((el) => el === document.activeElement)) break;
  }
  await expect(app.nav('New session')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'New session', level: 1 })).toBeVisible();

  // The form: focus Client ID, type, Space toggles Reusable, Enter submits.
  await app.clientId().focus();
  await page.keyboard.type('kb-user');
  await page.keyboard.press('Tab');
  await expect(app.reusable()).toBeFocused();
  await page.keyboard.press('Space');
  await expect(app.reusable()).toBeChecked();
  await app.clientId().focus();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('button', { name: 'Copy link' })).toBeVisible();
  await app.pauseButton().focus();
  await page.keyboard.press('Enter');
  await expect(app.resumeButton()).toBeEnabled();

  // Limits tabs move with the arrow keys.
  await app.go('Limits');
  await page.getByRole('tab', { name: 'Global' }).focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.getByRole('tab', { name: 'Client' })).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByRole('tab', { name: 'Client' })).toBeFocused();
  await expect(app.limitField('Max sessions')).toBeVisible();

  // The session list: arrows move between rows, Enter opens one.
  await app.go('Sessions');
  // Sessions made through the API after the page loaded show up by themselves.
  await expect(page.getByRole('row', { name: /kb-second/ })).toBeVisible();
  const first = page.getByRole('row', { name: /kb-user/ });
  await first.focus();
  await page.keyboard.press('ArrowDown');
  await expect(page.getByRole('row', { name: /kb-second/ })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('button', { name: 'Copy link' })).toBeVisible();
  await expect(page.getByText('kb-second').first()).toBeVisible();
});
