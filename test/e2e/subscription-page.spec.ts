// The page a person gets when they open a subscription URL in a browser: the client's data
// against its cap, one QR code and one import button per app, readable on a phone and a
// desktop in light and dark, with no horizontal overflow (asserted), no script at all, and no
// WCAG 2.1 AA violation axe-core finds (axe.ts).
import { test, expect } from './fixtures.ts';
import { axeViolationsInBothSchemes } from './axe.ts';
import { picturesInBothSchemes } from './schemes.ts';

interface Session { id: string }

test('the subscription page in Chromium, phone and desktop, light and dark', async ({ page, backend }, testInfo) => {
  const client = `page-${Date.now()}`;
  await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'nl-ams', reusable: true });
  await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  const { body: sub } = await backend.api<{ url: string }>('PUT', `/subscriptions/${encodeURIComponent(client)}`);
  const scripts: string[] = [];
  page.on('request', (r) => {
    if (r.resourceType() === 'script') scripts.push(r.url());
  });
  for (const viewport of [{ width: 390, height: 844 }, { width: 1280, height: 800 }]) {
    await page.setViewportSize(viewport);
    const res = await page.goto(sub.url);
    expect(res?.headers()['content-type']).toMatch(/^text\/html/);
    await expect(page.getByRole('heading', { level: 1, name: `VPN Access Desk: ${client}` })).toBeVisible();
    await expect(page.getByText(/used · no data cap/)).toBeVisible();
    await expect(page.getByText('It lists 2 connections.', { exact: false })).toBeVisible();
    for (const app of ['v2rayNG', 'Hiddify', 'sing-box', 'Clash Meta (Mihomo)', 'Streisand / Happ']) {
      await expect(page.getByRole('link', { name: `Import into ${app}`, exact: true })).toBeVisible();
      await expect(page.getByRole('img', { name: `QR code of the ${app} subscription URL` })).toBeVisible();
    }
    await expect(page.getByRole('textbox', { name: 'Subscription URL for v2rayNG' })).toHaveValue(sub.url);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, 'no horizontal overflow').toBeLessThanOrEqual(0);
    const found = await axeViolationsInBothSchemes(page, `${viewport.width}`);
    expect(found, found.join('\n')).toEqual([]);
    await picturesInBothSchemes(page, testInfo, `${viewport.width}`);
  }
  expect(scripts).toEqual([]);
});
