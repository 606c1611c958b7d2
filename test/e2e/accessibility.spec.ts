// Every screen checked by axe-core (the accessibility engine browsers' own audits use) against
// WCAG 2.1 A and AA, in light and dark, wide and at phone width: names of controls, roles,
// landmarks, labels, and text contrast, with a session that moved bytes so that the charts,
// counters, events and tables have content. Each violation is printed with the rule, its help
// text and the elements it found, so a failure says what to fix. The desktop project checks its
// window's width; the phone width is web mode's (a phone opens the web UI, not the desktop app).
import AxeBuilder from '@axe-core/playwright';
import { test, expect } from './fixtures.ts';
import type { AppPage, NavName } from './pages.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';

const SCREENS: NavName[] = ['Sessions', 'Clients', 'New session', 'Dashboard', 'Limits', 'Events', 'Proxy', 'Settings'];
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/** The violations axe finds on the page as it is now, one line each: rule, help, elements. */
async function violations(app: AppPage): Promise<string[]> {
  const result = await new AxeBuilder({ page: app.page }).withTags(TAGS).analyze();
  return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.map((n) => `${n.target.join(' ')}${n.failureSummary ? ` [${n.failureSummary.replace(/\s+/g, ' ')}]` : ''}`).join('; ')}`);
}

for (const scheme of ['light', 'dark'] as const) {
  test(`no WCAG 2.1 AA violation on any screen (${scheme})`, async ({ app, backend }, testInfo) => {
    test.setTimeout(180_000);
    const page = app.page;
    await page.emulateMedia({ colorScheme: scheme });
    const client = `a11y-${scheme}`;
    const { body: made } = await backend.api<{ id: string }>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
    const { body: live } = await backend.api<{ configuration: Configuration }>('GET', `/sessions/${made.id}`);
    const origin = await startOrigin();
    const v2ray = await startV2ray(live.configuration);
    try {
      expect((await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${256 * 1024}`).done).code).toBe(0);
    } finally {
      await v2ray.stop();
      await origin.close();
    }
    await page.reload();
    await app.waitReady();
    const found: string[] = [];
    for (const width of testInfo.project.name === 'web' ? [1280, 390] : [1280]) {
      await page.setViewportSize({ width, height: width > 500 ? 800 : 844 });
      for (const name of SCREENS) {
        await app.go(name);
        if (name === 'Dashboard') await expect(page.getByTestId('usage-chart').first()).toBeVisible({ timeout: 15_000 });
        if (name === 'Limits') await expect(app.saveLimits()).toBeVisible();
        found.push(...(await violations(app)).map((v) => `${width} ${name}: ${v}`));
      }
      await app.openSession(made.id);
      await expect(page.getByTestId('usage-chart').first()).toBeVisible({ timeout: 15_000 });
      found.push(...(await violations(app)).map((v) => `${width} session detail: ${v}`));
      await app.openClient(client);
      found.push(...(await violations(app)).map((v) => `${width} client: ${v}`));
      if (width === 390) {
        await app.menuButton().click();
        found.push(...(await violations(app)).map((v) => `${width} menu: ${v}`));
        await page.keyboard.press('Escape');
      }
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(found, found.join('\n')).toEqual([]);
  });
}
