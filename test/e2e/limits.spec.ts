import { test, expect } from './fixtures.ts';
import { holdBack } from './slow-network.ts';
import type { LimitTab, LimitFieldName } from './pages.ts';

const CASES: Array<{ tab: LimitTab; scope: string; fields: LimitFieldName[] }> = [
  { tab: 'Global', scope: 'global', fields: ['Downloaded bytes', 'Uploaded bytes', 'Download speed', 'Upload speed'] },
  { tab: 'Client', scope: 'client', fields: ['Downloaded bytes', 'Uploaded bytes', 'Download speed', 'Upload speed', 'Max sessions', 'Max reconnections', 'Max devices'] },
  { tab: 'Session', scope: 'session', fields: ['Downloaded bytes', 'Uploaded bytes', 'Download speed', 'Upload speed'] },
];

for (const c of CASES) {
  test(`edit and delete the ${c.scope} limits`, async ({ app, backend }) => {
    const page = app.page;
    await backend.api('DELETE', `/customer/limits/${c.scope}`);
    await app.waitReady();
    await app.go('Limits');
    await app.limitsTab(c.tab);
    await expect(page.getByTestId('limits-unset')).toBeVisible();
    await expect(app.deleteLimits()).toBeDisabled();
    if (c.scope !== 'client') await expect(page.getByLabel('Max sessions', { exact: true })).toHaveCount(0);

    // Create: one field with a unit, one as a plain integer.
    await app.limitField('Downloaded bytes').fill('1.5 GB');
    await expect(page.getByText('= 1.50 GB')).toBeVisible();
    await app.limitField('Upload speed').fill('524288');
    if (c.scope === 'client') await app.limitField('Max sessions').fill('3');
    await app.saveLimits().click();
    await expect(page.getByTestId('limits-unset')).toHaveCount(0);
    let rec = await backend.api<Record<string, number>>('GET', `/customer/limits/${c.scope}`);
    expect(rec.status).toBe(200);
    expect(rec.body.downloaded_bytes).toBe(Math.round(1.5 * 1024 ** 3));
    expect(rec.body.upload_speed).toBe(524288);
    if (c.scope === 'client') expect(rec.body.max_sessions).toBe(3);

    // Edit: change one, clear one (removes it), add one.
    await app.limitField('Downloaded bytes').fill('2 GB');
    await app.limitField('Upload speed').fill('');
    await app.limitField('Download speed').fill('100 KB/s');
    await app.saveLimits().click();
    await expect.poll(async () => (await backend.api<Record<string, number>>('GET', `/customer/limits/${c.scope}`)).body.downloaded_bytes).toBe(2 * 1024 ** 3);
    rec = await backend.api<Record<string, number>>('GET', `/customer/limits/${c.scope}`);
    expect(rec.body.upload_speed).toBeUndefined();
    expect(rec.body.download_speed).toBe(102400);

    // Validation: a speed of 0 is refused in the form.
    await app.limitField('Download speed').fill('0');
    await expect(page.getByText('A speed limit must be at least 1 byte per second.')).toBeVisible();
    await app.limitField('Download speed').fill('100 KB/s');

    // Reload shows the stored values.
    await page.reload();
    await app.limitsTab(c.tab);
    await expect(app.limitField('Downloaded bytes')).toHaveValue(String(2 * 1024 ** 3));

    await app.deleteLimits().click();
    await expect(page.getByTestId('limits-unset')).toBeVisible();
    expect((await backend.api('GET', `/customer/limits/${c.scope}`)).status).toBe(404);
  });
}

test('an agent token sees why limits are not available', async ({ backend, openApp }, testInfo) => {
  test.skip(testInfo.project.name === 'electron', 'the electron project has one app, always on its owner token');
  const agent = backend.newToken('agent');
  const app = await openApp({ backend, token: agent });
  const page = app.page;
  await app.waitReady();
  await app.go('Limits');
  await expect(page.getByText('This API token has the agent role')).toBeVisible();
  await expect(app.saveLimits()).toHaveCount(0);
});

test('what is typed while a save is on its way stays when the answer arrives', async ({ app, backend }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'in web mode the browser sends the PATCH itself, so it can be held back here');
  await backend.api('DELETE', '/customer/limits/session');
  await app.waitReady();
  await app.go('Limits');
  await app.limitsTab('Session');
  const page = app.page;
  // The PATCH is held on its way (a slow network) while the person goes on typing.
  const held = await holdBack(page, '**/v2/customer/limits/session', 'PATCH');
  await app.limitField('Downloaded bytes').fill('1 GB');
  await app.limitField('Upload speed').fill('64 KB/s');
  await app.saveLimits().click();
  await expect.poll(held.count).toBe(1);
  await app.limitField('Download speed').fill('0');
  held.release();
  await expect(page.getByText('Session limits saved.')).toBeVisible();
  expect(held.count()).toBe(1);
  // The server's answer fills what was sent, in bytes; the field typed since keeps its text and its check.
  await expect(app.limitField('Downloaded bytes')).toHaveValue(String(1024 ** 3));
  await expect(app.limitField('Upload speed')).toHaveValue(String(64 * 1024));
  await expect(app.limitField('Download speed')).toHaveValue('0');
  await expect(page.getByText('A speed limit must be at least 1 byte per second.')).toBeVisible();
  await page.unroute('**/v2/customer/limits/session');
  await backend.api('DELETE', '/customer/limits/session');
});
