// Clients as first-class, in the window: the client page's limits override saved there and
// enforced by real v2ray traffic (the client goes over quota, and says so in the Clients and
// Sessions lists); Disable from the client page, with its question, shown in both lists and on
// the session's link; Reset usage; the devices a subscription fetch with `x-hwid` registers,
// listed and removed, and a third refused by a limit of two; Disable cutting a live v2ray transfer;
// links that can carry no traffic greyed with the reason; the Clients screen past a hundred clients
// (Show more, search). Screenshots in light and dark (test-results/clients-*/).
import { test, expect } from './fixtures.ts';
import { axeViolationsInBothSchemes } from './axe.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { overflowOf } from './layout.ts';
import type { Page, TestInfo } from '@playwright/test';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';

interface Session { id: string; client_id: string; configuration: Configuration; status: string }
interface Client { client_id: string; status: string; disabled: boolean; limits: Record<string, unknown>; limit_sources: Record<string, string>; period: null | { downloaded_bytes: number } }

/** The whole screen, light and dark: the window made as tall as the content area's scroll height for the pictures. */
const shot = async (page: Page, testInfo: TestInfo, name: string) => {
  const size = page.viewportSize()!;
  const tall = await page.locator('#content').evaluate((el) => el.scrollHeight + 60);
  await page.setViewportSize({ width: size.width, height: Math.min(Math.max(tall, size.height), 4000) });
  await page.waitForTimeout(150);
  try {
    await picturesInBothSchemes(page, testInfo, name);
  } finally {
    await page.setViewportSize(size);
  }
};


test('an override set on the client page is enforced; over quota and disabled show in both lists', async ({ app, backend }, testInfo) => {
  test.setTimeout(120_000);
  const page = app.page;
  const client = `capped-${Date.now()}`;
  const enc = encodeURIComponent(client);
  const { body: s } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  await page.reload();
  await app.waitReady();

  // The override, from the client page: the field says where the value in force comes from.
  await app.openClient(client);
  await expect(page.getByTestId('limits-unset')).toContainText('No override');
  await page.getByLabel('Downloaded bytes', { exact: true }).fill('256 KB');
  await page.getByLabel('Byte caps renew', { exact: true }).selectOption('day');
  await page.getByRole('button', { name: 'Save override', exact: true }).click();
  await expect(page.getByTestId('source-downloaded_bytes')).toContainText("256 KB, from this client's override");
  const { body: override } = await backend.api<Record<string, unknown>>('GET', `/clients/${enc}/limits`);
  expect(override).toMatchObject({ downloaded_bytes: 262_144, reset_period: 'day' });
  const { body: before } = await backend.api<Client>('GET', `/clients/${enc}`);
  expect(before.limits.downloaded_bytes).toBe(262_144);
  expect(before.limit_sources.downloaded_bytes).toBe('override');

  // Real traffic past the cap: the client is over quota, and every list says so in words.
  const origin = await startOrigin();
  const v2ray = await startV2ray(s.configuration);
  try {
    await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${2 * 1024 * 1024}`, 15).done;
  } finally {
    await v2ray.stop();
    await origin.close();
  }
  await expect(page.getByTestId('client-status')).toContainText('over quota until', { timeout: 20_000 });
  expect((await backend.api<Client>('GET', `/clients/${enc}`)).body.status).toBe('over_quota');
  await expect(page.getByRole('meter', { name: `Usage of ${client} against its byte cap` })).toHaveAttribute('aria-valuenow', '100');
  await shot(page, testInfo, 'client over quota');
  await app.go('Clients');
  await expect(page.locator(`tr[data-client-id="${client}"]`)).toContainText('over quota until');
  await shot(page, testInfo, 'clients over quota');
  await app.go('Sessions');
  const row = page.locator(`[data-session-id="${s.id}"]`);
  await expect(row).toContainText('over quota until');
  await expect(row.getByRole('meter')).toHaveAttribute('aria-valuenow', '100');
  await shot(page, testInfo, 'sessions over quota');
  // Narrower windows with the sidebar: the list drops columns, never clips a row's actions.
  try {
    for (const width of [1100, 900, 800]) {
      await page.setViewportSize({ width, height: 800 });
      await expect(row.getByRole('button', { name: /^Copy link of/ })).toBeVisible();
      const clipped = await row.evaluate((el) => {
        const table = el.closest('.table')!.getBoundingClientRect();
        return [...el.querySelectorAll('button, [role="meter"]')].filter((b) => b.getBoundingClientRect().right > table.right + 0.5).map((b) => b.getAttribute('aria-label'));
      });
      expect(clipped, `${width} px`).toEqual([]);
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
  // The same at 390 px: nothing wider than the window.
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    for (const [name, open] of [
      ['sessions', () => expect(row).toContainText('over quota until')],
      ['clients', async () => (await app.go('Clients'), expect(page.locator(`tr[data-client-id="${client}"]`)).toContainText('over quota until'))],
      ['client', async () => (await app.openClient(client), expect(page.getByTestId('client-status')).toContainText('over quota until'))],
    ] as const) {
      await open();
      expect(await overflowOf(page), `${name} at 390 px`).toEqual([]);
      await shot(page, testInfo, `phone ${name} over quota`);
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }

  // Reset usage (asked first): the count starts over, the client may connect again.
  await app.openClient(client);
  await page.getByRole('button', { name: 'Reset usage', exact: true }).click();
  await expect(page.getByRole('alertdialog')).toContainText('start over from zero');
  // The over-quota page with its question open: no WCAG 2.1 AA violation (axe.ts).
  const found = await axeViolationsInBothSchemes(page, 'over quota, asked to reset');
  expect(found, found.join('\n')).toEqual([]);
  await page.getByRole('alertdialog').getByRole('button', { name: 'Reset usage' }).click();
  await expect(page.getByTestId('client-status')).not.toContainText('over quota');
  expect((await backend.api<Client>('GET', `/clients/${enc}`)).body.status).not.toBe('over_quota');

  // Disable (asked first, saying it cuts live connections): both lists and the link say so.
  // By keyboard first: Escape answers no and changes nothing.
  await page.getByRole('button', { name: 'Disable', exact: true }).focus();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('button', { name: 'Disable now', exact: true })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('alertdialog')).toHaveCount(0);
  expect((await backend.api<Client>('GET', `/clients/${enc}`)).body.disabled).toBe(false);
  await page.getByRole('button', { name: 'Disable', exact: true }).click();
  await expect(page.getByRole('alertdialog')).toContainText('live connections are cut');
  await page.getByRole('button', { name: 'Disable now', exact: true }).click();
  await expect(page.getByTestId('client-status')).toContainText('disabled');
  expect((await backend.api<Client>('GET', `/clients/${enc}`)).body.disabled).toBe(true);
  await app.go('Clients');
  await expect(page.locator(`tr[data-client-id="${client}"]`)).toContainText('disabled');
  await app.go('Sessions');
  await expect(row).toContainText('client disabled');
  await expect(row, 'the usage reset ended the over quota').not.toContainText('over quota');
  await shot(page, testInfo, 'sessions disabled');
  await app.openSession(s.id);
  await expect(page.getByTestId('link-blocked')).toContainText('is disabled');
  await expect(page.getByRole('button', { name: 'Copy link' })).toBeEnabled();
  await shot(page, testInfo, 'session disabled');

  // Enable again; remove the override: the template applies.
  await app.openClient(client);
  await page.getByRole('button', { name: 'Enable', exact: true }).click();
  await expect(page.getByTestId('client-status')).not.toContainText('disabled');
  await page.getByRole('button', { name: 'Remove override', exact: true }).click();
  await expect(page.getByTestId('limits-unset')).toBeVisible();
  expect((await backend.api('GET', `/clients/${enc}/limits`)).status).toBe(404);
});

test('devices registered by subscription fetches with x-hwid are listed, and Remove removes one', async ({ app, backend }, testInfo) => {
  const page = app.page;
  const client = `devices-${Date.now()}`;
  const enc = encodeURIComponent(client);
  await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  const { body: sub } = await backend.api<{ url: string }>('PUT', `/subscriptions/${enc}`);
  for (const d of [
    { 'x-hwid': 'e2e-hw-pixel', 'x-device-os': 'Android', 'x-ver-os': '14', 'x-device-model': 'Pixel 8', 'user-agent': 'v2rayNG/1.9.0' },
    { 'x-hwid': 'e2e-hw-iphone', 'x-device-os': 'iOS', 'x-ver-os': '17.5', 'x-device-model': 'iPhone 15', 'user-agent': 'Shadowrocket/2.2' },
  ]) {
    const res = await fetch(sub.url, { headers: d });
    expect(res.status).toBe(200);
  }
  await page.reload();
  await app.waitReady();
  await app.openClient(client);
  const table = page.getByRole('table', { name: `Devices of ${client}` });
  await expect(table.locator('tbody tr')).toHaveCount(2);
  await expect(table.locator('tr[data-hwid="e2e-hw-pixel"]')).toContainText('Android 14');
  await expect(table.locator('tr[data-hwid="e2e-hw-iphone"]')).toContainText('iPhone 15');
  await page.getByRole('table', { name: `Devices of ${client}` }).scrollIntoViewIfNeeded();
  await shot(page, testInfo, 'devices');
  await page.getByRole('button', { name: 'Remove device Pixel 8', exact: true }).click();
  await expect(table.locator('tbody tr')).toHaveCount(1);
  const { body } = await backend.api<{ devices: Array<{ hwid: string }> }>('GET', `/clients/${enc}/devices`);
  expect(body.devices.map((d) => d.hwid)).toEqual(['e2e-hw-iphone']);

  // A device limit of 2 for this client (its override): a second device is served, a third is
  // refused with the headers the apps read and no links, and the page lists the two.
  expect((await backend.api('PATCH', `/clients/${enc}/limits`, { max_devices: 2 })).status).toBe(200);
  const fetchAs = (hwid: string) => fetch(sub.url, { headers: { 'x-hwid': hwid, 'x-device-os': 'Android', 'user-agent': 'Happ/3.2.1' } });
  const second = await fetchAs('e2e-hw-tablet');
  expect(second.headers.get('x-hwid-max-devices-reached')).toBeNull();
  expect((await second.text()).length).toBeGreaterThan(0);
  const third = await fetchAs('e2e-hw-third');
  expect(third.status).toBe(200);
  expect(third.headers.get('x-hwid-max-devices-reached')).toBe('true');
  expect(await third.text()).toBe('');
  await page.reload();
  await app.waitReady();
  await app.openClient(client);
  await expect(table.locator('tbody tr')).toHaveCount(2);
  await expect(table.locator('tr[data-hwid="e2e-hw-third"]')).toHaveCount(0);
});

test('Disable on the client page cuts a live transfer; Enable lets the same link carry traffic again', async ({ app, backend }) => {
  test.setTimeout(90_000);
  const page = app.page;
  const client = `cut-${Date.now()}`;
  const { body: s } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  const origin = await startOrigin();
  const v2ray = await startV2ray(s.configuration);
  try {
    await page.reload();
    await app.waitReady();
    await app.openClient(client);
    // A slow download (about 20 s) is running when the client is disabled.
    const slow = curlViaSocks(v2ray.socksPort, `${origin.url}/slow?n=${64 * 1024 * 400}&ms=50`, 60);
    await expect.poll(async () => (await backend.api<{ downloaded_bytes: number }>('GET', `/sessions/${s.id}/status`)).body.downloaded_bytes, { timeout: 15_000 }).toBeGreaterThan(256 * 1024);
    await page.getByRole('button', { name: 'Disable', exact: true }).click();
    await page.getByRole('button', { name: 'Disable now', exact: true }).click();
    await expect(page.getByRole('button', { name: 'Enable', exact: true })).toBeVisible();
    const cut = await slow.done;
    expect(cut.bytes).toBeLessThan(64 * 1024 * 400);
    // Refused while disabled: a new connection carries nothing.
    expect((await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=100000`, 5).done).bytes).toBe(0);
    await page.getByRole('button', { name: 'Enable', exact: true }).click();
    await expect(page.getByRole('button', { name: 'Disable', exact: true })).toBeVisible();
    const again = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${1024 * 1024}`).done;
    expect(again.bytes).toBe(1024 * 1024);
  } finally {
    await v2ray.stop();
    await origin.close();
  }
});

test('a link that can carry no traffic is greyed with the reason: copyable while paused, not once ended', async ({ app, backend }, testInfo) => {
  test.setTimeout(60_000);
  const page = app.page;
  const client = `links-${Date.now()}`;
  const { body: paused } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  const { body: once } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: false });
  await backend.api('PATCH', `/sessions/${paused.id}/pause`);
  // The one-connection session carries one real connection, and then it has ended.
  const origin = await startOrigin();
  const v2ray = await startV2ray(once.configuration);
  try {
    expect((await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=1024`).done).code).toBe(0);
  } finally {
    await v2ray.stop();
    await origin.close();
  }
  await expect.poll(async () => (await backend.api<Session>('GET', `/sessions/${once.id}`)).body.status, { timeout: 15_000 }).toBe('ended');
  await page.reload();
  await app.waitReady();

  // In the list: the badges in words, and the row's Copy link refused only for the ended one.
  const pausedRow = page.locator(`[data-session-id="${paused.id}"]`);
  const endedRow = page.locator(`[data-session-id="${once.id}"]`);
  await expect(pausedRow.locator('[data-badge="paused"]')).toBeVisible();
  await expect(endedRow.locator('[data-badge="ended"]')).toBeVisible();
  await expect(pausedRow.getByRole('button', { name: `Copy link of ${client}'s session` })).toBeEnabled();
  await expect(endedRow.getByRole('button', { name: `Copy link of ${client}'s session` })).toBeDisabled();
  await expect(pausedRow.getByRole('button', { name: `Resume the session of ${client}` })).toBeEnabled();
  await expect(endedRow.getByRole('button', { name: `Pause the session of ${client}` })).toBeDisabled();

  // A row's Resume is a real button: the session is resumed without leaving the list.
  await pausedRow.getByRole('button', { name: `Resume the session of ${client}` }).click();
  await expect(pausedRow.locator('[data-badge="paused"]')).toHaveCount(0);
  await expect(page.getByRole('heading', { level: 1, name: 'Sessions' })).toBeVisible();
  await pausedRow.getByRole('button', { name: `Pause the session of ${client}` }).click();
  await expect(pausedRow.locator('[data-badge="paused"]')).toBeVisible();

  await app.openSession(paused.id);
  await expect(page.getByTestId('link-blocked')).toContainText('paused');
  await expect(page.getByTestId('link-blocked')).toHaveAttribute('data-final', 'false');
  await expect(page.getByRole('button', { name: 'Copy link' })).toBeEnabled();
  await shot(page, testInfo, 'link-paused');
  await app.openSession(once.id);
  await expect(page.getByTestId('link-blocked')).toContainText('has ended');
  await expect(page.getByTestId('link-blocked')).toHaveAttribute('data-final', 'true');
  await expect(page.getByRole('button', { name: 'Copy link' })).toBeDisabled();
  await expect(page.getByRole('img', { name: /QR code of the configuration link \(no longer works\)/ })).toBeVisible();
  await shot(page, testInfo, 'link-ended');
});

test('expiry set and cleared on the client page; within a day the lists warn', async ({ app, backend }, testInfo) => {
  const page = app.page;
  const client = `expiry-${Date.now()}`;
  const enc = encodeURIComponent(client);
  const { body: s } = await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  await page.reload();
  await app.waitReady();
  await app.openClient(client);
  await expect(page.getByText(`${client} never expires.`)).toBeVisible();
  // Three hours ahead, in the window's local time (what a datetime-local field holds).
  const local = await page.evaluate(() => {
    const d = new Date(Date.now() + 3 * 3_600_000 + 60_000);
    return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  });
  await page.getByLabel('Expires', { exact: true }).fill(local);
  await page.getByRole('button', { name: 'Set expiry', exact: true }).click();
  await expect(page.getByTestId('client-status')).toContainText('expires in 3 hours');
  const { body: set } = await backend.api<{ expires_at: string | null }>('GET', `/clients/${enc}`);
  expect(Date.parse(set.expires_at!) - Date.now()).toBeGreaterThan(2.9 * 3_600_000);
  await app.go('Sessions');
  await expect(page.locator(`[data-session-id="${s.id}"]`)).toContainText('client expires in 3 hours');
  await shot(page, testInfo, 'sessions-expires-soon');
  await app.openClient(client);
  await page.getByRole('button', { name: 'Clear expiry', exact: true }).click();
  await expect(page.getByText(`${client} never expires.`)).toBeVisible();
  expect((await backend.api<{ expires_at: string | null }>('GET', `/clients/${enc}`)).body.expires_at).toBeNull();
});

test('desktop: main refuses client and device calls with unknown keys or values of the wrong kind', async ({ app, backend, desktop }, testInfo) => {
  test.skip(testInfo.project.name !== 'desktop', "the IPC router is the desktop app's");
  const client = `ipc-${Date.now()}`;
  await backend.api<Session>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true });
  await app.waitReady();
  const answers = await app.page.evaluate(async (c) => {
    type Answer = Promise<{ ok: boolean; error?: { code: string } }>;
    const bridge = (window as unknown as { app: Record<string, (...args: unknown[]) => Answer> }).app;
    return {
      badUpdate: await bridge.updateClient!(c, { disabled: true, owner: 'mallory' }),
      badKind: await bridge.updateClient!(c, { disabled: 'yes' }),
      badLimits: await bridge.updateClientLimits!(c, { downloaded_bytes: 1024, colour: 'red' }),
      badAmount: await bridge.updateClientLimits!(c, { downloaded_bytes: '1 GB' }),
      badQuery: await bridge.listClients!({ status: 'idle', evil: 1 }),
      badClient: await bridge.getClient!('has spaces'),
      badHwid: await bridge.deleteDevice!(c, 'not a hwid'),
      good: await bridge.getClient!(c),
      goodList: await bridge.listClients!({ status: 'idle' }),
    };
  }, client);
  for (const [name, a] of Object.entries(answers)) {
    if (name.startsWith('good')) expect(a, name).toMatchObject({ ok: true });
    else expect(a, name).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
  }
  // Each call crossed IPC (main answered it), and none of the refused ones reached the server.
  expect(desktop!.state.invoked.filter((i) => /^app:(updateClient|updateClientLimits|listClients|getClient|deleteDevice)$/.test(i.channel)).length).toBeGreaterThanOrEqual(9);
  const { body } = await backend.api<{ disabled: boolean; limits: Record<string, unknown> }>('GET', `/clients/${client}`);
  expect(body.disabled).toBe(false);
  expect((await backend.api('GET', `/clients/${client}/limits`)).status).toBe(404);
});

test('the Clients screen with more than a hundred clients: a hundred rows, Show more, search by a part of the id', async ({ backend, openApp }, testInfo) => {
  test.skip(testInfo.project.name === 'electron', 'the electron project has one app, always on its owner token');
  // A customer of its own, so the other specs' clients stay apart.
  const token = backend.server.services.sqlite!.store.createToken(`many-${testInfo.project.name}`, 'owner').token;
  const ids = Array.from({ length: 130 }, (_, i) => `shop-${String(i).padStart(3, '0')}`);
  for (const id of ids) expect((await backend.api('POST', '/sessions', { client_id: id, zone: 'de-fra' }, token)).status).toBe(201);
  const app = await openApp({ backend, token });
  const page = app.page;
  // The sessions screen reads the clients of its rows in view by name, never the whole list (web: the
  // requests are the page's own; the desktop's go through main).
  const lists: URL[] = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.pathname === '/v2/clients') lists.push(url);
  });
  await app.waitReady();
  await app.go('Sessions');
  await expect(page.locator('[data-session-id]').first()).toContainText('no byte cap');
  if (testInfo.project.name === 'web') {
    expect(lists.length).toBeGreaterThan(0);
    for (const url of lists) {
      const named = url.searchParams.getAll('client_id');
      expect(named.length, url.search).toBeGreaterThan(0);
      expect(named.length).toBeLessThanOrEqual(40);
    }
  }
  await app.go('Clients');
  const rows = page.locator('.clients-table tbody tr');
  await expect(rows).toHaveCount(100);
  await expect(page.getByTestId('clients-shown')).toHaveText('100 of 130 clients shown');
  await shot(page, testInfo, 'clients first hundred');
  await page.getByRole('button', { name: 'Show 30 more', exact: true }).click();
  await expect(rows).toHaveCount(130);
  await expect(page.getByTestId('clients-shown')).toHaveCount(0);
  await page.getByRole('searchbox', { name: 'Search' }).fill('SHOP-12');
  await expect(rows).toHaveCount(10);
  await expect(rows.first()).toHaveAttribute('data-client-id', 'shop-120');
  await page.getByRole('searchbox', { name: 'Search' }).fill('nobody');
  await expect(page.getByText('No client matches')).toBeVisible();
  await expect(page.getByText('No client id contains "nobody".')).toBeVisible();
  await shot(page, testInfo, 'clients no match');
  // the empty state clears the search and the status at once
  await page.getByRole('combobox', { name: 'Status' }).selectOption('disabled');
  await expect(page.getByText('No disabled client has "nobody" in its id.')).toBeVisible();
  await page.getByRole('button', { name: 'Show every client' }).click();
  await expect(page.getByRole('searchbox', { name: 'Search' })).toHaveValue('');
  await expect(page.getByRole('combobox', { name: 'Status' })).toHaveValue('');
  await expect(rows).toHaveCount(100, { timeout: 5000 });
  expect(await overflowOf(page)).toEqual([]);
});
