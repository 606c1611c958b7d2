// Settings → Webhooks: the empty state, adding an endpoint by keyboard-reachable
// controls (URL, event kinds), the secret shown once with a copy button, a real delivery to a
// local receiver (node:http on 127.0.0.1; the backend's egress policy allows loopback) shown
// with its answer, and deleting after a confirmation. Screenshots in light and dark are kept as
// artifacts (test-results/webhooks-*/<scheme>-*.png).
import { createServer, type Server } from 'node:http';
import { test, expect } from './fixtures.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { axeViolations } from './axe.ts';

async function receiver(status = 200): Promise<{ url: string; bodies: string[]; close(): Promise<void> }> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let b = '';
    req.on('data', (c: Buffer) => (b += c.toString()));
    req.on('end', () => {
      bodies.push(b);
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    bodies,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

async function removeAll(backend: { api<T>(m: string, p: string, b?: unknown): Promise<{ body: T }> }): Promise<void> {
  const { body } = await backend.api<{ webhooks: { id: string }[] }>('GET', '/webhooks');
  for (const h of body.webhooks) await backend.api('DELETE', `/webhooks/${h.id}`);
}

test('webhooks in Settings: empty state, add with the secret shown once, deliveries with answers, delete', async ({ app, backend, readClipboard }) => {
  await removeAll(backend);
  const recv = await receiver();
  try {
    const page = app.page;
    await app.waitReady();
    await app.go('Settings');
    const card = page.getByRole('region', { name: 'Webhooks' });
    await expect(card.getByText('No webhooks yet')).toBeVisible();

    await card.getByLabel('Endpoint URL').fill(recv.url);
    await card.getByRole('checkbox', { name: 'Limits changed' }).check();
    await card.getByRole('checkbox', { name: 'Session started' }).uncheck();
    await card.getByRole('button', { name: 'Add webhook' }).click();
    const secretBox = card.getByTestId('webhook-secret');
    await expect(secretBox).toContainText(/whsec_[A-Za-z0-9_-]{43}/);
    const secret = (await secretBox.locator('.mono').textContent())!.trim();
    await secretBox.getByRole('button', { name: 'Copy secret' }).click();
    expect(await readClipboard()).toBe(secret);
    await expect(card.getByTestId('webhook-row')).toHaveCount(1);
    await expect(card.getByTestId('webhook-row')).toContainText('limits_changed');
    await secretBox.getByRole('button', { name: 'Done' }).click();
    await expect(card.getByTestId('webhook-secret')).toHaveCount(0);
    // The secret is never shown again (the list has only its prefix).
    await expect(card).not.toContainText(secret);

    // A real delivery, answered 200, appears with its answer.
    await backend.api('PATCH', '/customer/limits/global', { uploaded_bytes: 123456 });
    await expect.poll(() => recv.bodies.length, { timeout: 15_000 }).toBeGreaterThan(0);
    await card.getByRole('button', { name: 'Show deliveries' }).click();
    await expect(async () => {
      await card.getByRole('button', { name: 'Refresh deliveries' }).click();
      await expect(card.getByTestId('webhook-delivery').first()).toContainText('HTTP 200', { timeout: 1000 });
    }).toPass({ timeout: 15_000 });
    await expect(card.getByTestId('webhook-delivery').first()).toContainText('delivered');

    // Delete, after the confirmation.
    page.once('dialog', (d) => void d.accept());
    await card.getByRole('button', { name: `Delete webhook ${recv.url}` }).click();
    await expect(card.getByText('No webhooks yet')).toBeVisible();
    await backend.api('DELETE', '/customer/limits/global');
  } finally {
    await recv.close();
  }
});

test('adding by keyboard only: type the URL, Space toggles a kind, Enter submits', async ({ app, backend }) => {
  await removeAll(backend);
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  const card = page.getByRole('region', { name: 'Webhooks' });
  const limits = card.getByRole('checkbox', { name: 'Limits changed' });
  await limits.focus();
  await page.keyboard.press('Space');
  await expect(limits).toBeChecked();
  await card.getByLabel('Endpoint URL').focus();
  await page.keyboard.type('https://hooks.example.com/vpn');
  await page.keyboard.press('Enter');
  await expect(card.getByTestId('webhook-secret')).toBeVisible();
  await expect(card.getByTestId('webhook-row')).toContainText('limits_changed');
  // The secret's buttons are reachable by Tab from the copy button.
  await card.getByRole('button', { name: 'Copy secret' }).focus();
  await page.keyboard.press('Tab');
  await expect(card.getByRole('button', { name: 'Done' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(card.getByTestId('webhook-secret')).toHaveCount(0);
  await removeAll(backend);
});

test('a bad URL gets a clear message', async ({ app }) => {
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  const card = page.getByRole('region', { name: 'Webhooks' });
  // type=url accepts ftp:, the server refuses it with its reason.
  await card.getByLabel('Endpoint URL').fill('ftp://example.com/hook');
  await card.getByRole('button', { name: 'Add webhook' }).click();
  await expect(card.getByRole('alert')).toContainText(/http or https/);
});

test('screenshots of Settings → Webhooks, light and dark', async ({ app, backend }, testInfo) => {
  await removeAll(backend);
  const ok = await receiver(200);
  const failing = await receiver(500);
  try {
    const page = app.page;
    await app.waitReady();
    await app.go('Settings');
    const card = page.getByRole('region', { name: 'Webhooks' });
    const shot = async (name: string) => {
      await card.scrollIntoViewIfNeeded();
      await page.waitForTimeout(150);
      await picturesInBothSchemes(page, testInfo, name, { take: (path) => card.screenshot({ path }) });
    };
    await expect(card.getByText('No webhooks yet')).toBeVisible();
    await shot('webhooks-empty');
    await card.getByLabel('Endpoint URL').fill(ok.url);
    await card.getByRole('checkbox', { name: 'Limits changed' }).check();
    await card.getByRole('button', { name: 'Add webhook' }).click();
    await expect(card.getByTestId('webhook-secret')).toBeVisible();
    await shot('webhooks-secret');
    await backend.api('POST', '/webhooks', { url: failing.url, events: ['limits_changed'] });
    await backend.api('PATCH', '/customer/limits/global', { uploaded_bytes: 999 });
    await expect.poll(() => ok.bodies.length + failing.bodies.length, { timeout: 15_000 }).toBeGreaterThan(1);
    await page.reload();
    await app.waitReady();
    await app.go('Settings');
    // Each click turns its button into "Hide deliveries": open the first one left, twice.
    for (let i = 0; i < 2; i++) await card.getByRole('button', { name: 'Show deliveries' }).first().click();
    await expect(card.getByTestId('webhook-delivery')).toHaveCount(2);
    await shot('webhooks-deliveries');
    await backend.api('DELETE', '/customer/limits/global');
    await removeAll(backend);
  } finally {
    await ok.close();
    await failing.close();
  }
});

/** A loopback port nothing listens on: connections to it are refused. */
async function deadUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/hook`;
}

test('health in words: a Failing badge, the last error and when, Send test, Disabled with the reason', async ({ app, backend }, testInfo) => {
  await removeAll(backend);
  const ok = await receiver(200);
  const dead = await deadUrl();
  try {
    const page = app.page;
    const { body: failing } = await backend.api<{ id: string }>('POST', '/webhooks', { url: dead, events: ['limits_changed'] });
    await backend.api('POST', '/webhooks', { url: ok.url, events: ['session_start'] });
    // A real delivery to a refused port fails: the endpoint records its last error.
    await backend.api('PATCH', '/customer/limits/global', { uploaded_bytes: 4242 });
    await expect.poll(async () => (await backend.api<{ last_error: string | null }>('GET', `/webhooks/${failing.id}`)).body.last_error, { timeout: 15_000 }).not.toBeNull();
    await app.waitReady();
    await app.go('Settings');
    const card = page.getByRole('region', { name: 'Webhooks' });
    const deadRow = card.getByTestId('webhook-row').filter({ hasText: dead });
    const okRow = card.getByTestId('webhook-row').filter({ hasText: ok.url });
    await expect(deadRow.getByTestId('webhook-state')).toHaveText('Failing');
    await expect(okRow.getByTestId('webhook-state')).toHaveText('OK');
    // "Last error 3 seconds ago: connection refused", and the next retry only as a time ahead.
    await expect(deadRow.getByTestId('webhook-last-error')).toHaveText(/^Last error (just now|\d+ seconds? ago): connection refused( · Next retry in \d+ seconds?)?$/);
    await expect(deadRow.getByTestId('webhook-health')).toHaveText(/^Failing( for \d+ seconds)?: \d+ attempts? in a row\.$/);

    // Send test: the answer in words, at once.
    await deadRow.getByRole('button', { name: `Send test to ${dead}` }).click();
    await expect(deadRow.getByTestId('webhook-test-result')).toHaveText('Failed: connection refused');
    await okRow.getByRole('button', { name: `Send test to ${ok.url}` }).click();
    await expect(okRow.getByTestId('webhook-test-result')).toHaveText(/^Delivered: 200 in \d+ ms$/);
    expect(ok.bodies.map((b) => (JSON.parse(b) as { type: string }).type)).toEqual(['test']);

    // Its deliveries: a retry reads as a time ahead or "retrying now", never a time in the past.
    await deadRow.getByRole('button', { name: 'Show deliveries' }).click();
    const status = deadRow.getByTestId('webhook-delivery').first().locator('td').nth(1);
    await expect(status).toHaveText(/^(retry in \d+ (second|minute)s?|retrying now|failed)$/);
    await expect(deadRow.getByTestId('webhook-delivery').first()).toContainText('connection refused');

    // Disabled by the server (the state 50 failures in a row leave; reaching it takes an hour of retries).
    const db = backend.server.services.sqlite!.store.db;
    db.prepare('UPDATE webhooks SET enabled = 0, disabled_reason = ?, disabled_at = ? WHERE id = ?').run('50 delivery attempts failed in a row', new Date().toISOString(), failing.id);
    await page.reload();
    await app.waitReady();
    await app.go('Settings');
    await expect(deadRow.getByTestId('webhook-state')).toHaveText('Disabled');
    await expect(deadRow.getByRole('alert')).toHaveText(/^Disabled by the server (just now|\d+ seconds? ago): 50 delivery attempts failed in a row\. Fix the receiver, then enable it again\.$/);
    await expect(deadRow.getByTestId('webhook-last-error')).not.toContainText('Next retry');
    await okRow.getByRole('button', { name: `Send test to ${ok.url}` }).click();
    await expect(okRow.getByTestId('webhook-test-result')).toHaveText(/^Delivered: 200 in \d+ ms$/);
    await deadRow.getByRole('button', { name: `Send test to ${dead}` }).click();
    await expect(deadRow.getByTestId('webhook-test-result')).toHaveText('Failed: connection refused');
    await picturesInBothSchemes(page, testInfo, 'webhooks health', {
      check: async (scheme) => {
        const found = await axeViolations(page, `${scheme} webhooks failing and disabled`);
        expect(found, found.join('\n')).toEqual([]);
      },
      take: (path) => card.screenshot({ path }),
    });
    await backend.api('DELETE', '/customer/limits/global');
    await removeAll(backend);
  } finally {
    await ok.close();
  }
});

test('deliveries that cannot be loaded say so, and Try again loads them', async ({ app, backend }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'in web mode the browser asks the server itself, so its request can be cut here');
  await removeAll(backend);
  await backend.api('POST', '/webhooks', { url: 'https://hooks.example.com/vpn', events: ['limits_changed'] });
  const page = app.page;
  await app.waitReady();
  await app.go('Settings');
  const card = page.getByRole('region', { name: 'Webhooks' });
  // The server unreachable for the deliveries' request: the browser's own network error.
  await page.route('**/v2/webhooks/*/deliveries**', (route) => route.abort('connectionrefused'));
  await card.getByRole('button', { name: 'Show deliveries' }).click();
  await expect(card.getByRole('alert')).toContainText('The server could not be reached');
  await page.unroute('**/v2/webhooks/*/deliveries**');
  await card.getByRole('button', { name: 'Try again' }).click();
  await expect(card.getByText('No deliveries yet.')).toBeVisible();
  await expect(card.getByRole('alert')).toHaveCount(0);
  await removeAll(backend);
});
