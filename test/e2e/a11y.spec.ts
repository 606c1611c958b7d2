// Every control on every screen has an accessible name (from Chromium's accessibility tree).
import { test, expect } from './fixtures.ts';
import type { NavName } from './pages.ts';

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
