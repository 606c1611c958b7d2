// A window opening on more sessions than it loads at once: the newest 10,000 come page by page
// (the first page shows at once), the header says older ones wait, and they load as the list is
// scrolled to its end or with "Load older sessions", until every session is listed. The sessions
// are real rows of the server's SQLite file (bench/fixtures/scale-fill.ts), on a backend of this
// test's own (the worker's backend stays small for the other tests).
import { test, expect } from './fixtures.ts';
import { startBackend } from './backend.ts';
import { fillSqlite } from '../../bench/fixtures/scale-fill.ts';

test('10,600 sessions: the newest 10,000 at once, older pages on scrolling to the end and on "Load older sessions"', async ({ openApp }) => {
  test.setTimeout(180_000);
  const backend = await startBackend();
  try {
    const customer = (await backend.server.services.data.findToken(backend.token))!.customer_id;
    fillSqlite(backend.dataDir, customer, 10_600);
    const app = await openApp({ backend });
    const page = app.page;
    await app.waitReady();
    // The window opens on the Sessions screen and starts loading at once. No click is made while the
    // pages load: in the desktop project main's stand-in, the backend and Playwright's own driver share
    // this test's one Node process, which those 20 pages keep busy (an action then waits past its 10 s).
    await expect(app.nav('Sessions')).toHaveAttribute('aria-current', 'page', { timeout: 20_000 });
    await expect(page.getByRole('heading', { level: 1, name: 'Sessions', exact: true })).toBeVisible({ timeout: 20_000 });
    // The first page is listed while the others load.
    await expect(page.getByTestId('session-scroller').getByRole('row').first()).toBeVisible({ timeout: 20_000 });
    const count = page.getByTestId('session-count');
    await expect(count).toHaveText('10000 sessions loaded (the newest; older ones load as you scroll)', { timeout: 100_000 });
    // Scrolled to its end, the list asks for the next page by itself.
    await page.getByTestId('session-scroller').evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await expect(count).toHaveText('10500 sessions loaded (the newest; older ones load as you scroll)', { timeout: 20_000 });
    // The last page by the button: every session listed, nothing more to load.
    await page.getByRole('button', { name: 'Load older sessions' }).click();
    await expect(count).toHaveText('10600 sessions', { timeout: 20_000 });
    await expect(page.getByRole('button', { name: 'Load older sessions' })).toHaveCount(0);
  } finally {
    await backend.stop();
  }
});
