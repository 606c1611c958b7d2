// What the window says when things are not simple: the New session form's default (reusable),
// and a rate limit (a countdown of the server's Retry-After, not "Server unreachable"; the data
// stays). An outage once connected (the data stays, marked stale) is in errors.spec.ts.
// The rate-limit test runs its own server, so the electron project (one app) skips it.
import { test, expect } from './fixtures.ts';
import { startBackend, type Backend } from './backend.ts';

test('New session is reusable by default; the other choice says one connection, then ended', async ({ app, backend }) => {
  await app.waitReady();
  await app.go('New session');
  await expect(app.reusable()).toBeChecked();
  await expect(app.oneConnection()).not.toBeChecked();
  await expect(app.page.getByText(/keeps working for many connections/)).toBeVisible();
  await app.oneConnection().check();
  await expect(app.page.getByText(/the session ends when its first connection closes/)).toBeVisible();
  await app.reusable().check();
  const id = await app.createSession({ clientId: 'default-reusable' });
  const { body } = await backend.api<{ reusable: boolean }>('GET', `/sessions/${id}`);
  expect(body.reusable).toBe(true);
  await expect(app.pauseButton()).toBeEnabled();
});

/** Spends the token's allowance from the test itself; returns the server's Retry-After (s). */
async function exhaust(b: Backend): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${b.baseUrl}/zones`, { headers: { Authorization: `Bearer ${b.token}` } });
    await res.arrayBuffer();
    if (res.status === 429) return Number(res.headers.get('retry-after'));
  }
  throw new Error('the rate limit never answered 429');
}

/**
 * Spends the allowance at the start of a fresh window, so the countdown has seconds to show: a
 * burst that lands at the end of a window gets Retry-After 1, which cannot count down.
 */
async function exhaustFresh(b: Backend): Promise<number> {
  for (let i = 0; i < 3; i++) {
    const wait = await exhaust(b);
    if (wait >= 5) return wait;
    await new Promise((r) => setTimeout(r, (wait + 1) * 1000));
  }
  throw new Error('every burst landed at the end of a rate-limit window');
}

test('a 429 shows a countdown of Retry-After, not an outage, and the data stays', async ({ openApp }, testInfo) => {
  test.skip(testInfo.project.name === 'electron', 'needs a server of its own');
  test.setTimeout(120_000);
  const b = await startBackend({ rateLimit: { max: 60, windowMs: 12_000 } });
  try {
    await b.api('POST', '/sessions', { client_id: 'still-here', zone: 'de-fra', reusable: true });
    const app = await openApp({ backend: b });
    const page = app.page;
    await app.waitReady();
    await expect(page.locator('[data-session-id]').first()).toBeVisible();
    const retryAfter = await exhaustFresh(b);
    await page.getByRole('button', { name: 'Refresh' }).click();
    const notice = page.getByTestId('rate-limit');
    await expect(notice).toBeVisible();
    await expect(notice).toContainText('Rate limited.');
    const first = Number(await page.getByTestId('rate-limit-seconds').textContent());
    expect(first).toBeGreaterThan(1);
    expect(first).toBeLessThanOrEqual(retryAfter);
    // It counts down, the list stays, and it is not called an outage.
    await expect.poll(async () => Number(await page.getByTestId('rate-limit-seconds').textContent()), { timeout: 5000 }).toBeLessThan(first);
    await expect(page.getByRole('heading', { name: 'Server unreachable' })).toHaveCount(0);
    await expect(page.locator('[data-session-id]').first()).toBeVisible();
    await page.screenshot({ path: testInfo.outputPath('rate-limit-notice.png') });
    // When the wait is over the notice goes by itself.
    await expect(notice).toBeHidden({ timeout: (retryAfter + 5) * 1000 });

    // Met while connecting (a reload in the middle of a burst): the same countdown, then the app.
    await exhaust(b);
    await page.reload();
    await expect(page.getByTestId('rate-limit')).toBeVisible();
    await expect(page.getByRole('heading', { name: 'Server unreachable' })).toHaveCount(0);
    await page.screenshot({ path: testInfo.outputPath('rate-limit-while-connecting.png') });
    await expect(app.nav('Sessions')).toBeVisible({ timeout: (retryAfter + 10) * 1000 });
  } finally {
    await b.stop();
  }
});
