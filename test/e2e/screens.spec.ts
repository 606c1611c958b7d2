// Screenshots of every screen in light and dark, kept as test artifacts
// (test-results/screens-*/<scheme>-<screen>.png) for a person to look at.
import { test, expect } from './fixtures.ts';
import type { NavName } from './pages.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';

const SCREENS: NavName[] = ['Dashboard', 'Sessions', 'Clients', 'New session', 'Limits', 'Events', 'Proxy', 'Settings'];

test('screenshots of each screen, light and dark', async ({ app, backend }, testInfo) => {
  const page = app.page;
  const clients = ['alice@example.com', 'bob', 'carol.k', 'dave:ops', 'erin_01'];
  let lastId = '';
  for (const [i, c] of clients.entries()) {
    const r = await backend.api<{ id: string }>('POST', '/sessions', { client_id: `screens-${c}`, zone: ['de-fra', 'us-nyc', 'jp-tyo', 'nl-ams', 'gb-lon'][i], reusable: i % 2 === 0 });
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
      await picturesInBothSchemes(page, testInfo, name);
    }
    await app.openSession(lastId);
    await expect(page.getByRole('img', { name: 'QR code of the configuration link' })).toBeVisible();
    await page.waitForTimeout(3000); // a few seconds of the speed chart
    // Live traffic: the chart has lines, and its caption says what span it shows.
    await expect(page.locator('figure.chart figcaption')).toContainText(/last \d+s/);
    await expect(page.getByText('No traffic since this page opened', { exact: false })).toHaveCount(0);
    await picturesInBothSchemes(page, testInfo, 'session detail');
  } finally {
    slow.kill();
    await v2ray.stop();
    await origin.close();
  }
});
