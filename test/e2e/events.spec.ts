// Events read as a person would: a real VLESS connection (raw, through the server's TCP inbound
// to a loopback echo) opened and closed shows on the Events screen as "Connection opened" and
// "Connection closed" with the session's client, the type filter in the same words, a closed
// connection not in the danger colour; the session's timeline reads the same, with "Created" and
// "Paused … by" from the audit trail. Screenshots in light and dark
// (test-results/events-*/<scheme>-*.png).
import { test, expect } from './fixtures.ts';
import { picturesInBothSchemes } from './schemes.ts';
import type { Locator, Page } from '@playwright/test';
import { openVlessEcho, startTcpEcho } from '../dataplane/helpers/targets.ts';

/** The computed colour of a CSS colour expression, to compare with an element's. */
const cssColor = (page: Page, expr: string) =>
  page.evaluate((e) => {
    const probe = document.createElement('span');
    probe.style.color = e;
    document.body.append(probe);
    const c = getComputedStyle(probe).color;
    probe.remove();
    return c;
  }, expr);
const chipColor = (row: Locator) => row.locator('.evtype').first().evaluate((el) => getComputedStyle(el).color);

test('connection opened and closed, in words, with the client; a close is not red', async ({ app, backend }, testInfo) => {
  const page = app.page;
  // The desktop project shares one window per worker: start from a fresh page, so its event
  // stream is this test's (one run in CI found the window's stream closed by an earlier spec).
  await page.reload();
  await app.waitReady();
  await app.go('Events');
  await expect(page.getByRole('region', { name: 'Events' }).getByRole('status').first()).toHaveText('Live', { timeout: 15_000 });
  const client = 'events-in-words';
  const id = await app.createSession({ clientId: client, reusable: true });
  const echo = await startTcpEcho();
  try {
    const conn = await openVlessEcho(backend.server.vlessTcpPort!, id, echo.port);
    expect(conn.got()).toBe(4);
    conn.s.end();
    await conn.closed;

    await app.go('Events');
    const table = page.getByRole('table', { name: 'Event list' });
    const mine = table.locator('tbody tr').filter({ hasText: id.slice(0, 8) });
    const opened = mine.filter({ hasText: 'Connection opened' }).first();
    const closed = mine.filter({ hasText: 'Connection closed' }).first();
    await expect(opened).toBeVisible({ timeout: 15_000 });
    await expect(closed).toBeVisible({ timeout: 15_000 });
    await expect(opened.locator('td[data-label="Client"]')).toHaveText(client);
    await expect(closed.locator('td[data-label="Client"]')).toHaveText(client);
    await expect(table).not.toContainText('session_');
    expect(await chipColor(closed)).not.toBe(await cssColor(page, 'var(--danger)'));
    expect(await chipColor(opened)).toBe(await cssColor(page, 'var(--ok)'));

    // The type filter speaks the same words.
    await page.getByLabel('Event type').selectOption({ label: 'Connection closed' });
    await expect(mine.filter({ hasText: 'Connection opened' })).toHaveCount(0);
    await expect(mine.filter({ hasText: 'Connection closed' }).first()).toBeVisible();
    await page.getByLabel('Event type').selectOption({ label: 'All types' });
    // Filters that match nothing say so, and clear at once.
    await page.getByRole('searchbox', { name: 'Session filter' }).fill('no-such-session');
    await expect(page.getByText('No event matches these filters')).toBeVisible();
    await page.getByRole('button', { name: 'Show every event' }).click();
    await expect(page.getByRole('searchbox', { name: 'Session filter' })).toHaveValue('');
    await expect(closed).toBeVisible();
    await picturesInBothSchemes(page, testInfo, 'events', { take: (path) => page.screenshot({ path }) });

    // The session's timeline: the same words, and its changes with who made them.
    await app.openSession(id);
    await app.pauseButton().click();
    await expect(app.resumeButton()).toBeEnabled();
    const timeline = page.getByRole('list', { name: 'Session events' });
    await expect(timeline.locator('li[data-event-type="session_start"]').first()).toContainText('Connection opened');
    const closedItem = timeline.locator('li[data-event-type="session_end"]').first();
    await expect(closedItem).toContainText('Connection closed');
    expect(await chipColor(closedItem)).not.toBe(await cssColor(page, 'var(--danger)'));
    await expect(timeline.locator('[data-audit-action="session.create"]')).toContainText(/Created\s*created by owner · token/);
    await expect(timeline.locator('[data-audit-action="session.pause"]')).toContainText(/Paused\s*paused by owner · token/, { timeout: 15_000 });
    await expect(timeline).not.toContainText('session_');
    await timeline.scrollIntoViewIfNeeded();
    await picturesInBothSchemes(page, testInfo, 'timeline', { take: (path) => timeline.screenshot({ path }) });
  } finally {
    await echo.close();
  }
});
