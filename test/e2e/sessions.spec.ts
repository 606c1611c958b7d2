import { test, expect } from './fixtures.ts';

interface Zone { code: string; name: string; has_active_nodes: boolean; country: string }
interface Session { id: string; configuration_link: string; client_id: string; zone: string; reusable: boolean; status: string }

test('pick a zone, create a session, copy its link', async ({ app, backend, readClipboard }) => {
  const page = app.page;
  await app.waitReady();
  const { body } = await backend.api<{ zones: Zone[] }>('GET', '/zones');
  const usable = body.zones.filter((z) => z.has_active_nodes);
  const dead = body.zones.find((z) => !z.has_active_nodes);

  await app.go('New session');
  // Every zone is listed with its country; zones without active nodes cannot be chosen.
  for (const z of body.zones) {
    const option = app.zone().locator(`optgroup[label$="(${z.country})"] > option[value="${z.code}"]`);
    await expect(option).toHaveCount(1);
    if (z.has_active_nodes) await expect(option).toBeEnabled();
    else await expect(option).toBeDisabled();
  }
  expect(dead).toBeTruthy();

  // A zone can be picked by its name, as a person reads it.
  const zone = usable[1] ?? usable[0];
  await app.zone().selectOption({ label: zone.name });
  await expect(app.zone()).toHaveValue(zone.code);
  const id = await app.createSession({ clientId: 'e2e-alice@example.com', zone: zone.code, reusable: true });

  const { status, body: s } = await backend.api<Session>('GET', `/sessions/${id}`);
  expect(status).toBe(200);
  expect(s.zone).toBe(zone.code);
  expect(s.client_id).toBe('e2e-alice@example.com');
  expect(s.reusable).toBe(true);
  await expect(page.getByTestId('configuration-link')).toHaveText(s.configuration_link);
  await expect(page.getByRole('img', { name: 'QR code of the configuration link' })).toBeVisible();

  await page.getByRole('button', { name: 'Copy link' }).click();
  const clip = await readClipboard();
  expect(clip).toBe(s.configuration_link);
  expect(clip.startsWith(`vless://${id}@`)).toBe(true);

  // It is listed on the Sessions screen.
  await app.go('Sessions');
  await expect(page.getByRole('row', { name: /e2e-alice@example\.com/ })).toBeVisible();
});

test('client id is validated before anything is sent', async ({ app }) => {
  const page = app.page;
  await app.waitReady();
  await app.go('New session');
  await app.clientId().fill('has spaces');
  await page.getByRole('button', { name: 'Create session' }).click();
  await expect(page.getByText('Use only letters, digits and . _ : @ - (no spaces).')).toBeVisible();
  await expect(app.clientId()).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByRole('button', { name: 'Copy link' })).toHaveCount(0);
});

test('a non-reusable session cannot be paused', async ({ app }) => {
  await app.waitReady();
  await app.createSession({ clientId: 'one-shot', reusable: false });
  await expect(app.pauseButton()).toBeDisabled();
  await expect(app.resumeButton()).toBeDisabled();
  await expect(app.page.getByText('This session is not reusable')).toBeVisible();
});

test('pause and resume from the window (no traffic)', async ({ app, backend }) => {
  await app.waitReady();
  const id = await app.createSession({ clientId: 'pauser', reusable: true });
  await expect(app.resumeButton()).toBeDisabled();
  await app.pauseButton().click();
  await expect(app.resumeButton()).toBeEnabled();
  await expect(app.pauseButton()).toBeDisabled();
  expect((await backend.api<{ paused: boolean }>('GET', `/sessions/${id}/status`)).body.paused).toBe(true);
  await app.resumeButton().click();
  await expect(app.pauseButton()).toBeEnabled();
  expect((await backend.api<{ paused: boolean }>('GET', `/sessions/${id}/status`)).body.paused).toBe(false);
});

test('filters that match no session say so and clear at once', async ({ app }) => {
  await app.waitReady();
  await app.createSession({ clientId: 'filtered', reusable: true });
  const page = app.page;
  await app.go('Sessions');
  const rows = page.locator('[data-session-id]');
  await expect(rows.first()).toBeVisible();
  await page.getByRole('searchbox', { name: 'Search' }).fill('no-such-client-anywhere');
  await page.getByRole('combobox', { name: 'Status' }).selectOption('ended');
  await expect(page.getByText('No session matches these filters')).toBeVisible();
  await expect(rows).toHaveCount(0);
  await page.getByRole('button', { name: 'Show every session' }).click();
  await expect(page.getByRole('searchbox', { name: 'Search' })).toHaveValue('');
  await expect(page.getByRole('combobox', { name: 'Status' })).toHaveValue('');
  await expect(rows.first()).toBeVisible();
});
