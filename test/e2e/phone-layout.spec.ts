// Every screen at 1280 x 800 and at 390 x 844 (a phone), in light and dark: nothing wider than
// the window (asserted: the document, the content area and every control), a screenshot of each
// (test-results/phone-layout-*/<scheme>-<size>-<screen>.png, for a person to look at); the Menu
// button that replaces the sidebar on a phone; the theme chosen in Settings; input borders of
// at least 3:1 (WCAG 1.4.11).
import type { Page, TestInfo } from '@playwright/test';
import { test, expect } from './fixtures.ts';
import { overflowOf } from './layout.ts';
import { picturesInBothSchemes, type Scheme } from './schemes.ts';
import type { AppPage, NavName } from './pages.ts';
import { downloadThrough, type Configuration } from './vless.ts';

const SCREENS: NavName[] = ['Sessions', 'Clients', 'New session', 'Dashboard', 'Limits', 'Events', 'Proxy', 'Settings'];
const SIZES = [
  { name: 'wide', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;


/** The contrast ratio (WCAG) of a control's border against its own background. */
function borderContrast(page: Page, selector: string): Promise<number> {
  return page.locator(selector).evaluate((el) => {
    const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
    const lum = (c: string) => {
      const [r, g, b] = rgb(c).map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const st = getComputedStyle(el);
    const [a, b] = [lum(st.borderTopColor), lum(st.backgroundColor)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  });
}

/** The screen as it is now, in light and in dark: nothing wider than the window, and a picture of each. */
async function shoot(app: AppPage, testInfo: TestInfo, what: string, also?: (scheme: Scheme) => Promise<void>): Promise<void> {
  await app.page.waitForTimeout(200);
  await picturesInBothSchemes(app.page, testInfo, what, {
    check: async (scheme) => {
      expect(await overflowOf(app.page), `${scheme} ${what}: nothing wider than the window`).toEqual([]);
      await also?.(scheme);
    },
  });
}

test('every screen fits 1280 and 390 px wide, light and dark', async ({ app, backend }, testInfo) => {
  test.setTimeout(150_000);
  const page = app.page;
  const ids: string[] = [];
  for (const [i, c] of ['alice.long-name@example.com', 'bob', 'carol.k'].entries()) {
    const r = await backend.api<{ id: string }>('POST', '/sessions', { client_id: `fit-${c}`, zone: ['de-fra', 'us-nyc', 'jp-tyo'][i], reusable: true });
    ids.push(r.body.id);
  }
  await page.reload();
  await app.waitReady();
  // A short transfer, so that the events, the dashboard and the charts have rows.
  const { body: live } = await backend.api<{ configuration: Configuration }>('GET', `/sessions/${ids[0]}`);
  await downloadThrough(live.configuration, 1024 * 1024);
  for (const size of SIZES) {
    await page.setViewportSize({ width: size.width, height: size.height });
    for (const name of SCREENS) {
      await app.go(name);
      if (name === 'Events') await expect(page.locator('tr[data-event-type="session_end"]').first()).toBeVisible({ timeout: 15_000 });
      if (name === 'Limits') await expect(app.saveLimits()).toBeVisible();
      const contrast = async (scheme: Scheme) => expect(await borderContrast(page, '#client-id'), `${scheme} input border contrast`).toBeGreaterThanOrEqual(3);
      await shoot(app, testInfo, `${size.name} ${name}`, name === 'New session' ? contrast : undefined);
    }
    await app.openSession(ids[0]!);
    // Its transfer ended before the page opened: the speed chart says why it is empty.
    await expect(page.getByText('No traffic since this page opened', { exact: false })).toBeVisible();
    await shoot(app, testInfo, `${size.name} session detail`);
    await app.openClient('fit-alice.long-name@example.com');
    await expect(page.getByText('No subscription yet', { exact: true })).toBeVisible();
    await shoot(app, testInfo, `${size.name} client`);
    // The phone's navigation, opened.
    if (size.name === 'phone') {
      await app.menuButton().click();
      await shoot(app, testInfo, 'phone menu');
      await page.keyboard.press('Escape');
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

test('at 390 px a Menu button opens the navigation; Escape and a chosen screen close it', async ({ app }) => {
  const page = app.page;
  await app.waitReady();
  await expect(app.menuButton()).toBeHidden();
  await expect(app.nav('Limits')).toBeVisible();
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    const menu = app.menuButton();
    await expect(menu).toBeVisible();
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(app.nav('Limits')).toBeHidden();
    // By keyboard: Enter opens it, Tab reaches the first link, Escape closes it and gives focus back.
    await menu.focus();
    await page.keyboard.press('Enter');
    await expect(menu).toHaveAttribute('aria-expanded', 'true');
    await expect(app.nav('Limits')).toBeVisible();
    await page.keyboard.press('Tab');
    await expect(app.nav('Sessions')).toBeFocused();
    await page.keyboard.press('Escape');
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(app.nav('Limits')).toBeHidden();
    await expect(menu).toBeFocused();
    // By pointer: a chosen screen shows and the menu closes.
    await menu.click();
    await app.nav('Limits').click();
    await expect(page.getByRole('heading', { level: 1, name: 'Limits' })).toBeVisible();
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(app.nav('Limits')).toBeHidden();
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});

test('the theme is chosen in Settings, applied at once and kept', async ({ app }) => {
  const page = app.page;
  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.emulateMedia({ colorScheme: 'light' });
  await app.waitReady();
  await app.go('Settings');
  const theme = (name: 'System' | 'Light' | 'Dark') => page.getByRole('radio', { name, exact: true });
  await expect(theme('System')).toBeChecked();
  expect(await background()).toBe('rgb(246, 247, 249)');
  await theme('Dark').check();
  await expect.poll(background).toBe('rgb(17, 20, 24)');
  await page.reload();
  await app.waitReady();
  await expect.poll(background).toBe('rgb(17, 20, 24)');
  await app.go('Settings');
  await expect(theme('Dark')).toBeChecked();
  // Light holds against a dark system; System follows it again.
  await page.emulateMedia({ colorScheme: 'dark' });
  await theme('Light').check();
  await expect.poll(background).toBe('rgb(246, 247, 249)');
  await theme('System').check();
  await expect.poll(background).toBe('rgb(17, 20, 24)');
  await page.emulateMedia({ colorScheme: 'light' });
});
