// The subscription UI: the client view reached from the sessions list and from a session's
// detail, its empty state, turning on (QR code that really encodes the URL, copy, import
// links), rotating with a confirmation (the old URL then answers 404), turning off; Settings
// shows the TLS mode in force and why. Screenshots of the new views in light and dark are kept
// as artifacts (test-results/subscriptions-*/<scheme>-*.png).
import QRCode from 'qrcode';
import { test, expect } from './fixtures.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { axeViolations } from './axe.ts';
import type { Locator } from '@playwright/test';

interface Session { id: string; client_id: string }

/**
 * Checks that an <img> is a QR code of `text`: the page draws the loaded image on a canvas and
 * samples the centre of every module of the QR symbol that `text` makes (qrcode's encoder,
 * level M, margin 2 as the app draws it); every module must have the right colour. An image
 * of another text, an empty image or a broken one fails.
 */
async function expectQrOf(img: Locator, text: string): Promise<void> {
  await expect(img).toHaveAttribute('data-qr-text', text);
  const qr = QRCode.create(text, { errorCorrectionLevel: 'M' });
  const n = qr.modules.size;
  const margin = 2;
  const seen = await img.evaluate(async (el: HTMLImageElement, { n, margin }) => {
    await el.decode();
    const w = el.naturalWidth;
    const h = el.naturalHeight;
    const canvas = document.createElement('canvas');
    canvas.width = w;
    canvas.height = h;
    const ctx = canvas.getContext('2d')!;
    ctx.drawImage(el, 0, 0);
    const data = ctx.getImageData(0, 0, w, h).data;
    const scale = w / (n + 2 * margin);
    const dark: number[] = [];
    for (let r = 0; r < n; r++)
      for (let c = 0; c < n; c++) {
        const x = Math.floor((c + margin + 0.5) * scale);
        const y = Math.floor((r + margin + 0.5) * scale);
        dark.push(data[(y * w + x) * 4] < 128 ? 1 : 0);
      }
    return { w, h, scale, dark };
  }, { n, margin });
  expect(seen.w).toBeGreaterThan(0);
  expect(seen.w).toBe(seen.h);
  expect(seen.scale).toBeGreaterThanOrEqual(2);
  const expected = Array.from({ length: n * n }, (_, i) => (qr.modules.get(Math.floor(i / n), i % n) ? 1 : 0));
  expect(seen.dark.reduce((a, b) => a + b, 0)).toBeGreaterThan(n); // not a blank image
  expect(seen.dark.filter((d, i) => d !== expected[i]).length).toBe(0);
}

test('client view: empty state, turn on, QR, copy, import links, rotate with confirmation, turn off', async ({ app, backend, readClipboard }) => {
  const page = app.page;
  const client = `sub-${Date.now()}@example.com`;
  const { body: s } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  await page.reload();
  await app.waitReady();

  // From the sessions list: the client's link.
  await page.getByText(/^Clients and subscriptions/).click();
  await page.getByRole('link', { name: `Client ${client}`, exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: `Client ${client}` })).toBeVisible();
  await expect(page.getByText('No subscription yet', { exact: true })).toBeVisible();
  await expect(page.getByRole('list', { name: `Sessions of ${client}` }).getByRole('link', { name: s.id.slice(0, 8) })).toBeVisible();

  const url = await app.turnOnSubscription();
  const { body: record } = await backend.api<{ url: string; format_urls: Record<string, string> }>('GET', `/subscriptions/${encodeURIComponent(client)}`);
  expect(url).toBe(record.url);
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/sub\/\S+$/);
  await expectQrOf(app.subscriptionQr(), url);
  const feed = await fetch(url);
  expect(feed.status).toBe(200);
  expect(Buffer.from(await feed.text(), 'base64').toString()).toContain(`vless://${s.id}@`);

  await app.subscriptionButton('Copy subscription URL').click();
  expect(await readClipboard()).toBe(url);

  await expect(app.importLink('v2rayNG')).toHaveAttribute('href', `v2rayng://install-config?url=${encodeURIComponent(url)}`);
  await expect(app.importLink('sing-box')).toHaveAttribute('href', new RegExp(`^sing-box://import-remote-profile\\?url=${encodeURIComponent(record.format_urls['sing-box']).replace(/[.?*+()[\]\\]/g, '\\$&')}#`));
  await expect(app.importLink('Hiddify')).toHaveAttribute('href', new RegExp(`^hiddify://import/${url.replace(/[.?*+()[\]\\/]/g, '\\$&')}#`));
  await expect(app.importLink('Clash Meta (Mihomo)')).toHaveAttribute('href', `clash://install-config?url=${encodeURIComponent(record.format_urls.clash)}`);

  // Rotate asks first; Cancel changes nothing.
  await app.subscriptionButton('Rotate URL').click();
  await expect(page.getByRole('alertdialog', { name: 'Rotate the subscription URL?' })).toBeVisible();
  const found = await axeViolations(page, 'the subscription card, asked to rotate');
  expect(found, found.join('\n')).toEqual([]);
  await app.subscriptionButton('Cancel').click();
  await expect(app.subscriptionUrl()).toHaveText(url);
  await app.subscriptionButton('Rotate URL').click();
  await app.subscriptionButton('Rotate now').click();
  await expect(app.subscriptionUrl()).not.toHaveText(url);
  const rotated = (await app.subscriptionUrl().textContent()) ?? '';
  expect(rotated).toMatch(/\/sub\/\S+$/);
  await expectQrOf(app.subscriptionQr(), rotated);
  expect((await fetch(url)).status).toBe(404);
  expect((await fetch(rotated)).status).toBe(200);
  await expect(page.getByText(/URL changed/)).toBeVisible();

  // The session detail shows the subscription and leads back to the client view.
  await app.openSession(s.id);
  await expect(page.getByText(rotated, { exact: true })).toBeVisible();
  await page.getByRole('link', { name: `QR code, import links and settings of ${client}'s subscription` }).click();
  await expect(page.getByRole('heading', { level: 1, name: `Client ${client}` })).toBeVisible();

  await app.subscriptionButton('Turn off').click();
  await expect(page.getByText('No subscription yet', { exact: true })).toBeVisible();
  await expect(app.subscriptionQr()).toHaveCount(0);
  expect((await fetch(rotated)).status).toBe(404);
  expect((await backend.api('GET', `/subscriptions/${encodeURIComponent(client)}`)).status).toBe(404);

  // The session detail's empty state points to the client view.
  await app.openSession(s.id);
  await expect(page.getByText(`No subscription yet for ${client}.`)).toBeVisible();
  await page.getByRole('link', { name: `Set up a subscription for ${client}` }).click();
  await expect(page.getByRole('button', { name: 'Turn on subscription' })).toBeVisible();
});

test('a subscription turned off elsewhere: the view says so in words, and the client link works from the detail', async ({ app, backend }) => {
  const page = app.page;
  const client = `gone-${Date.now()}`;
  const { body: s } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra' });
  await backend.api('PUT', `/subscriptions/${client}`);
  await page.reload();
  await app.waitReady();
  await app.openSession(s.id);
  await page.getByRole('link', { name: `Client ${client}: subscription and sessions` }).click();
  await expect(app.subscriptionQr()).toBeVisible();
  // Turned off through the API meanwhile: Turn off still ends in the off state, no raw error.
  expect((await backend.api('DELETE', `/subscriptions/${client}`)).status).toBe(204);
  await app.subscriptionButton('Turn off').click();
  await expect(page.getByText('No subscription yet', { exact: true })).toBeVisible();
  await expect(page.getByRole('alert')).toHaveCount(0);
});

test('Settings shows the TLS mode in force and why', async ({ app, backend }) => {
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  const { body: info } = await backend.api<{ tls_status: { mode: string; enabled: boolean; reason: string } }>('GET', '/server-info');
  await expect(page.getByTestId('tls-mode')).toHaveText(`${info.tls_status.enabled ? 'On' : 'Off'} (mode ${info.tls_status.mode})`);
  await expect(page.getByTestId('tls-mode')).toHaveText('Off (mode auto)');
  await expect(page.getByTestId('tls-reason')).toHaveText(info.tls_status.reason);
  await expect(page.getByTestId('tls-reason')).toContainText('127.0.0.1 is loopback, private or link-local');
  await expect(page.getByRole('heading', { level: 2, name: 'Let other devices connect' })).toBeVisible();
});

test("screenshots of the client view, the session detail's subscription and Settings, light and dark", async ({ app, backend }, testInfo) => {
  const page = app.page;
  const client = 'pictures-phone@example.com';
  const { body: s } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'nl-ams', reusable: true });
  await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra' });
  await page.reload();
  await app.waitReady();
  const shot = async (name: string) => {
    await page.waitForTimeout(150);
    await picturesInBothSchemes(page, testInfo, name);
  };
  await app.openClient(client);
  await expect(page.getByText('No subscription yet', { exact: true })).toBeVisible();
  await shot('client-empty');
  await app.turnOnSubscription();
  await shot('client-subscription');
  await app.subscriptionButton('Rotate URL').click();
  await shot('client-rotate-confirm');
  await app.subscriptionButton('Cancel').click();
  await app.openSession(s.id);
  await expect(page.getByRole('button', { name: 'Copy subscription URL' })).toBeVisible();
  await shot('session-detail-subscription');
  await app.go('Settings');
  await page.getByRole('button', { name: 'Load server information' }).click({ timeout: 2000 }).catch(() => {});
  await expect(page.getByTestId('tls-mode')).toBeVisible();
  await shot('settings');
});
