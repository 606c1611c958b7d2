// Screenshots of every screen in light and dark, kept as test artifacts
// (test-results/screens-*/<scheme>-<screen>.png) for a person to look at.
import { test, expect } from './fixtures.ts';
import type { NavName } from './pages.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';

const SCREENS: NavName[] = ['Dashboard', 'Sessions', 'Clients', 'New session', 'Limits', 'Events', 'Proxy', 'Settings'];

for (const scheme of ['light', 'dark'] as const) {
  test(`screenshots of each screen (${scheme})`, async ({ app, backend }, testInfo) => {
    const page = app.page;
    await page.emulateMedia({ colorScheme: scheme });
    const clients = ['alice@example.com', 'bob', 'carol.k', 'dave:ops', 'erin_01'];
    let lastId = '';
    for (const [i, c] of clients.entries()) {
      const r = await backend.api<{ id: string }>('POST', '/sessions', { client_id: `${scheme}-${c}`, zone: ['de-fra', 'us-nyc', 'jp-tyo', 'nl-ams', 'gb-lon'][i], reusable: i % 2 === 0 });
      lastId = r.body.id;
    }
    await backend.api('PATCH', '/customer/limits/global', { downloaded_bytes: 10 * 1024 ** 3, download_speed: 5 * 1024 ** 2 });
    await page.reload();
    await app.waitReady();
    // Live traffic on the newest session while the screens are taken.
    const { body: live } = await backend.api<{ configuration: Configuration }>('GET', `/sessions/${lastId}`);
    const origin = await startOrigin();
    const v2ray = await startV2ray(live.configuration);
    await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${2 * 1024 * 1024}`).done;
    const slow = curlViaSocks(v2ray.socksPort, `${origin.url}/slow?n=${64 * 1024 * 2000}&ms=20`, 40);
    await expect(page.getByText('1 active')).toBeVisible({ timeout: 15_000 });
    try {
      for (const name of SCREENS) {
        await app.go(name);
        if (name === 'Limits') await expect(page.getByRole('button', { name: 'Save limits' })).toBeVisible();
        await page.waitForTimeout(150);
        const file = testInfo.outputPath(`${scheme}-${name.toLowerCase().replace(' ', '-')}.png`);
        await page.screenshot({ path: file, fullPage: true });
        await testInfo.attach(`${scheme} ${name}`, { path: file, contentType: 'image/png' });
      }
      await app.openSession(lastId);
      await expect(page.getByRole('img', { name: 'QR code of the configuration link' })).toBeVisible();
      await page.waitForTimeout(3000); // a few seconds of the speed chart
      // Live traffic: the chart has lines, and its caption says what span it shows.
      await expect(page.locator('figure.chart figcaption')).toContainText(/last \d+s/);
      await expect(page.getByText('No traffic since this page opened', { exact: false })).toHaveCount(0);
      const file = testInfo.outputPath(`${scheme}-session-detail.png`);
      await page.screenshot({ path: file, fullPage: true });
      await testInfo.attach(`${scheme} session detail`, { path: file, contentType: 'image/png' });
    } finally {
      slow.kill();
      await v2ray.stop();
      await origin.close();
    }
  });
}
