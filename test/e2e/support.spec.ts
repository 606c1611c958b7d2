// The support view of a session: a real v2ray transfer shows in the Connections card (its
// destination, bytes, speed) while it runs; Pause cuts it ("No open connections") and a
// connection tried while paused shows in the Refusals card in words with its fix and the count
// of the last hour. Both cards fit 390 px; screenshots in light and dark.
import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.ts';
import { axeViolationsInBothSchemes } from './axe.ts';
import { overflowOf } from './layout.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';


test("a session's live connections and refusals, light and dark", async ({ app, backend }, testInfo) => {
  test.setTimeout(90_000);
  const page = app.page;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'support-view', reusable: true });
  const { body: session } = await backend.api<{ configuration: Configuration }>('GET', `/sessions/${id}`);
  const origin = await startOrigin();
  const v2ray = await startV2ray(session.configuration);
  try {
    await app.openSession(id);
    const connections = page.getByTestId('connections-card');
    const refusals = page.getByTestId('refusals-card');
    await expect(connections.getByText('No open connections')).toBeVisible();
    await expect(refusals.getByText('No refused connections')).toBeVisible();

    // A slow transfer: listed live, its bytes moving.
    const slow = curlViaSocks(v2ray.socksPort, `${origin.url}/slow?n=${64 * 1024 * 400}&ms=50`, 60);
    const row = connections.getByTestId('connection');
    await expect(row).toHaveCount(1, { timeout: 15_000 });
    await expect(row.getByTestId('connection-destination')).toHaveText(new RegExp(`:${new URL(origin.url).port}$`));
    await expect(row).toContainText('VLESS ws');
    await expect(row).toContainText('node local');
    const down = async () => Number(await row.getByTestId('connection-down').getAttribute('data-value'));
    const first = await down();
    await expect.poll(down, { timeout: 10_000 }).toBeGreaterThan(first);
    await picturesInBothSchemes(page, testInfo, 'connections', { take: (path) => connections.screenshot({ path }) });

    // Pause: the transfer is cut, and a connection tried now is refused.
    await app.pauseButton().click();
    await expect(app.resumeButton()).toBeEnabled();
    await slow.done;
    await expect(connections.getByText('No open connections')).toBeVisible({ timeout: 10_000 });
    const refused = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=100000`, 5).done;
    expect(refused.bytes).toBe(0);
    const paused = refusals.locator('[data-testid="refusal"][data-reason="paused"]').first();
    await expect(paused).toBeVisible({ timeout: 10_000 });
    await expect(paused).toContainText('Paused: press Resume.');
    await expect(paused).toContainText('node local');
    await expect(refusals.getByTestId('refusal-counts')).toContainText(/Paused × \d+/);
    const found = await axeViolationsInBothSchemes(page, 'refusals listed');
    expect(found, found.join('\n')).toEqual([]);

    // A phone: both cards fit.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    expect(await overflowOf(page)).toEqual([]);
    await refusals.scrollIntoViewIfNeeded();
    await picturesInBothSchemes(page, testInfo, 'support at 390 px');
    await page.setViewportSize({ width: 1280, height: 800 });
    await app.resumeButton().click();
    await expect(app.pauseButton()).toBeEnabled();
  } finally {
    await v2ray.stop();
    await origin.close();
  }
});
