// Error states a person can meet: a bad token, the server going away (and coming back),
// and the rate limit. Each test runs its own server (and, in the desktop project, its own
// desktop app aimed at it), so the electron project, which has one app, skips them.
import { test, expect } from './fixtures.ts';
import { axeViolations } from './axe.ts';
import { startBackend } from './backend.ts';
import { AppPage } from './pages.ts';
import { startServer } from '../../server/serve.ts';
import { RENDERER_DIR } from './backend.ts';

test.beforeEach(({}, testInfo) => {
  test.skip(testInfo.project.name === 'electron', 'these states need a server per test; the web and desktop projects cover them');
});

test('a bad token is refused in words, and a good one gets in', async ({ page, backend, openEmbeddedDesktop }, testInfo) => {
  if (testInfo.project.name === 'desktop') {
    // The desktop app keeps the token in main: a bad one is given in the connection
    // settings, and the good one is entered where the refusal is shown.
    const d = await openEmbeddedDesktop();
    const app = new AppPage(d.page);
    await app.waitReady();
    await app.go('Settings');
    await d.page.getByLabel('Remote server').check();
    await d.page.getByLabel('Base URL').fill(backend.baseUrl);
    await d.page.getByRole('textbox', { name: 'API token' }).fill('not-a-real-token');
    await d.page.getByRole('button', { name: 'Save endpoint' }).click();
    await expect(d.page.getByText('The API token was not accepted. Enter a valid token.')).toBeVisible();
    await d.page.getByText('Connection settings').click();
    await d.page.getByRole('textbox', { name: 'API token' }).fill(backend.token);
    await d.page.getByRole('button', { name: 'Save endpoint' }).click();
    await expect(app.nav('Sessions')).toBeVisible();
    return;
  }
  await page.addInitScript(() => localStorage.setItem('vpn-access.token', 'not-a-real-token'));
  await page.goto(backend.origin + '/');
  await expect(page.getByText('The API token was not accepted. Enter a valid token.')).toBeVisible();
  await page.getByLabel('API token', { exact: true }).fill(backend.token);
  await page.getByRole('button', { name: 'Connect' }).click();
  await expect(new AppPage(page).nav('Sessions')).toBeVisible();
});

test('a token handed over in the address is kept and removed from it', async ({ page, backend }, testInfo) => {
  test.skip(testInfo.project.name === 'desktop', 'web mode only: the desktop window has no address and never holds a token (desktop/token.spec.ts proves that)');
  await page.goto(`${backend.origin}/#token=${encodeURIComponent(backend.token)}`);
  await expect(new AppPage(page).nav('Sessions')).toBeVisible();
  expect(page.url()).not.toContain(backend.token);
  expect(await page.evaluate(() => localStorage.getItem('vpn-access.token'))).toBe(backend.token);
});

test('the server goes away and comes back: the data stays, marked stale, until it is back', async ({ openApp }, testInfo) => {
  const b = await startBackend();
  const port = b.server.apiPort;
  try {
    await b.api('POST', '/sessions', { client_id: 'outage-alice', zone: 'de-fra', reusable: true });
    const app = await openApp({ backend: b });
    const page = app.page;
    await app.waitReady();
    const row = page.locator('[data-session-id]').first();
    await expect(row).toContainText('outage-alice');
    await b.server.close();
    await page.getByRole('button', { name: 'Refresh' }).click();
    // Not the "Server unreachable" card: the last data stays, with the time of the last answer.
    const banner = page.getByTestId('stale-banner');
    await expect(banner).toBeVisible();
    await expect(banner).toContainText(/Showing data from \d{1,2}:\d{2}/);
    await expect(banner).toContainText('reconnecting');
    await expect(row).toContainText('outage-alice');
    await expect(page.getByText('The server could not be reached.')).toBeVisible();
    await expect(page.getByRole('heading', { name: 'Server unreachable' })).toHaveCount(0);
    const found = await axeViolations(page, 'stale data while the server is away');
    expect(found, found.join('\n')).toEqual([]);
    await page.screenshot({ path: testInfo.outputPath('outage-stale.png') });
    // Back on the same port with the same data: the window recovers by itself.
    const again = await startServer({ dataDir: b.dataDir, port, rendererDir: RENDERER_DIR, vlessTcpPort: null, proxyPort: null });
    try {
      await expect(banner).toBeHidden({ timeout: 15_000 });
      await expect(row).toContainText('outage-alice');
    } finally {
      await again.close();
    }
  } finally {
    await b.stop().catch(() => {});
  }
});

test('the rate limit is explained', async ({ openApp }) => {
  const b = await startBackend({ rateLimit: { max: 12, windowMs: 60_000 } });
  try {
    const app = await openApp({ backend: b });
    const page = app.page;
    await app.waitReady();
    await app.go('New session');
    await app.clientId().fill('burst');
    const create = page.getByRole('button', { name: 'Create session' });
    for (let i = 0; i < 15; i++) {
      // The message may show twice (the banner, and a chart whose request was refused too).
      if (await page.getByText(/Too many requests in a short time/).first().isVisible()) break;
      await app.go('New session');
      await app.clientId().fill(`burst-${i}`);
      await create.click();
      await page.waitForTimeout(100);
    }
    await expect(page.getByText(/Too many requests in a short time\. The server asks to wait \d+ seconds/).first()).toBeVisible();
  } finally {
    await b.stop();
  }
});
