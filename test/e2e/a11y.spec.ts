// Accessibility of every screen. Every control has an accessible name (from Chromium's
// accessibility tree). And axe-core finds no WCAG 2.1 A or AA violation (names, roles, labels,
// landmarks, text contrast; axe.ts) on any screen, the session page, a client's page and the phone
// menu, in light and dark, with a session that moved bytes so that charts, counters, events and
// tables have content; the desktop project checks its window's width, the phone width is web
// mode's (a phone opens the web UI, not the desktop app). Also the sign-in screen of web mode.
import { test, expect } from './fixtures.ts';
import { axeViolationsInBothSchemes } from './axe.ts';
import type { NavName } from './pages.ts';
import { downloadThrough, type Configuration } from './vless.ts';

const CONTROL_ROLES = new Set(['button', 'textbox', 'searchbox', 'combobox', 'checkbox', 'switch', 'link', 'tab', 'radio', 'spinbutton', 'slider', 'menuitem', 'row', 'meter']);
const SCREENS: NavName[] = ['Sessions', 'Clients', 'New session', 'Limits', 'Events', 'Proxy', 'Settings'];

test('every control has an accessible name', async ({ app, backend }, testInfo) => {
  test.skip(testInfo.project.name === 'electron', 'uses a Chromium DevTools session; the web project covers the same renderer');
  const page = app.page;
  const s = await backend.api<{ id: string }>('POST', '/sessions', { client_id: 'a11y', zone: 'de-fra', reusable: true });
  await page.reload();
  await app.waitReady();
  const cdp = await page.context().newCDPSession(page);
  const unnamed: string[] = [];
  const check = async (where: string) => {
    await page.waitForTimeout(200);
    const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as { nodes: Array<{ ignored: boolean; role?: { value: string }; name?: { value: string } }> };
    for (const n of nodes) {
      const role = n.role?.value ?? '';
      if (!n.ignored && CONTROL_ROLES.has(role) && !(n.name?.value ?? '').trim()) unnamed.push(`${where}: ${role}`);
    }
  };
  for (const name of SCREENS) {
    await app.go(name);
    await check(name);
  }
  await app.openSession(s.body.id);
  await check('Session detail');
  await app.openClient('a11y');
  await check('Client page');
  expect(unnamed).toEqual([]);
});

const ALL_SCREENS: NavName[] = ['Sessions', 'Clients', 'New session', 'Dashboard', 'Limits', 'Events', 'Proxy', 'Settings'];

test('no WCAG 2.1 AA violation on any screen, light and dark', async ({ app, backend }, testInfo) => {
  test.setTimeout(180_000);
  const page = app.page;
  const client = 'axe-screens';
  const { body: made } = await backend.api<{ id: string }>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  const { body: live } = await backend.api<{ configuration: Configuration }>('GET', `/sessions/${made.id}`);
  await downloadThrough(live.configuration, 256 * 1024);
  await page.reload();
  await app.waitReady();
  const found: string[] = [];
  /** The page as it is now, checked in light and in dark. */
  const check = async (where: string) => void found.push(...(await axeViolationsInBothSchemes(page, where)));
  for (const width of testInfo.project.name === 'web' ? [1280, 390] : [1280]) {
    await page.setViewportSize({ width, height: width > 500 ? 800 : 844 });
    for (const name of ALL_SCREENS) {
      await app.go(name);
      if (name === 'Dashboard') await expect(page.getByTestId('usage-chart').first()).toBeVisible({ timeout: 15_000 });
      if (name === 'Limits') await expect(app.saveLimits()).toBeVisible();
      await check(`${width} ${name}`);
    }
    await app.openSession(made.id);
    await expect(page.getByTestId('usage-chart').first()).toBeVisible({ timeout: 15_000 });
    await check(`${width} session detail`);
    await app.openClient(client);
    await check(`${width} client`);
    if (width === 390) {
      await app.menuButton().click();
      await check(`${width} menu`);
      await page.keyboard.press('Escape');
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  expect(found, found.join('\n')).toEqual([]);
});

test('no WCAG 2.1 AA violation on the sign-in screen, light and dark', async ({ page, backend }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'web mode only: the desktop window never asks for a token');
  await page.goto(backend.origin);
  await expect(page.getByRole('textbox', { name: 'API token' })).toBeVisible();
  const found = await axeViolationsInBothSchemes(page, 'sign-in');
  expect(found, found.join('\n')).toEqual([]);
});
