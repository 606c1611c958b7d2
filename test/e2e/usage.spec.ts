// Usage history charts with real VLESS traffic through v2ray: the chart on the session
// detail, on the client page (reached from the sessions list by the client id) and on the
// Dashboard (totals, top clients), range switching by mouse and keyboard, hover values, the
// table alternative, and the empty state. Screenshots in light and dark under test-results
// (usage-*/<scheme>-<view>.png) for a person to look at. In the desktop project the same steps
// go through the preload bridge and main's `usage` IPC operation.
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page, TestInfo } from '@playwright/test';
import { test, expect } from './fixtures.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';

const MiB = 1024 * 1024;

// The dashboard's totals and top ten clients count every client of the customer: this file
// runs in a worker of its own, so other specs' traffic cannot push bob out of the top ten.
test.use({ ownBackend: 'usage' });

/** An HTTP server on loopback that reads every body to the end (upload traffic). */
async function startSink(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let n = 0;
    req.on('data', (d: Buffer) => (n += d.length));
    req.on('end', () => res.end(String(n)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Uploads `bytes` through the SOCKS port with curl; resolves with curl's exit code. */
function uploadViaSocks(socksPort: number, url: string, bytes: number): Promise<number | null> {
  const dir = mkdtempSync(join(tmpdir(), 'vad-upload-'));
  const file = join(dir, 'body.bin');
  writeFileSync(file, Buffer.alloc(bytes, 97));
  const child = spawn('curl', ['-sS', '-o', '/dev/null', '--max-time', '30', '--socks5-hostname', `127.0.0.1:${socksPort}`, '--data-binary', `@${file}`, url], { stdio: 'ignore' });
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      rmSync(dir, { recursive: true, force: true });
      resolve(code);
    }),
  );
}

// As in a11y.spec.ts, plus tables; the rows of a data table are read by their cells, not named.
const CONTROL_ROLES = new Set(['button', 'textbox', 'searchbox', 'combobox', 'checkbox', 'switch', 'link', 'tab', 'radio', 'spinbutton', 'slider', 'menuitem', 'table']);

/** Controls (and tables) without an accessible name, from Chromium's accessibility tree. */
async function unnamed(page: Page): Promise<string[]> {
  const cdp = await page.context().newCDPSession(page);
  const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as { nodes: Array<{ ignored: boolean; role?: { value: string }; name?: { value: string } }> };
  await cdp.detach();
  return nodes.filter((n) => !n.ignored && CONTROL_ROLES.has(n.role?.value ?? '') && !(n.name?.value ?? '').trim()).map((n) => n.role!.value);
}

/** The window with `focus` scrolled into view, and `focus` alone, in light and dark. */
async function shoot(page: Page, testInfo: TestInfo, name: string, focus: Locator): Promise<void> {
  await page.mouse.move(0, 0); // no tooltip or hover left over
  await focus.scrollIntoViewIfNeeded();
  await picturesInBothSchemes(page, testInfo, name, { take: (path) => page.screenshot({ path }) });
  await picturesInBothSchemes(page, testInfo, `${name} chart`, { take: (path) => focus.screenshot({ path }) });
}

test('usage charts: session detail, client page, dashboard, ranges, hover values and the empty state', async ({ app, backend, desktop }, testInfo) => {
  test.setTimeout(120_000);
  const page = app.page;
  await app.waitReady();
  const suffix = testInfo.project.name;
  const alice = `usage-alice-${suffix}`;
  const bob = `usage-bob-${suffix}`;
  const quiet = `usage-quiet-${suffix}`;
  const make = async (client: string) =>
    (await backend.api<{ id: string; configuration: Configuration }>('POST', '/sessions', { client_id: client, zone: 'de-fra', reusable: true })).body;
  // This file's worker has a backend of its own (test.use above): no traffic counted yet.
  const before = await backend.api<{ totals: { downloaded_bytes: number }; top_clients?: unknown[] }>('GET', '/usage');
  expect(before.body.totals.downloaded_bytes).toBe(0);
  expect(before.body.top_clients ?? []).toEqual([]);
  const a = await make(alice);
  const b = await make(bob);
  const q = await make(quiet);

  // Real traffic: alice downloads 3 MiB and uploads 1 MiB, bob downloads 1 MiB.
  const origin = await startOrigin();
  const sink = await startSink();
  const va = await startV2ray(a.configuration);
  const vb = await startV2ray(b.configuration);
  try {
    expect((await curlViaSocks(va.socksPort, `${origin.url}/bytes?n=${3 * MiB}`).done).bytes).toBe(3 * MiB);
    expect(await uploadViaSocks(va.socksPort, `${sink.url}/upload`, MiB)).toBe(0);
    expect((await curlViaSocks(vb.socksPort, `${origin.url}/bytes?n=${MiB}`).done).bytes).toBe(MiB);
  } finally {
    await va.stop();
    await vb.stop();
    await sink.close();
    await origin.close();
  }
  // The history holds it once the counters are saved (every 500 ms); the API flushes on read.
  const usageOf = async (query: string) =>
    (await backend.api<{ totals: { uploaded_bytes: number; downloaded_bytes: number } }>('GET', `/usage?${query}`)).body.totals;
  await expect.poll(async () => (await usageOf(`session_id=${a.id}`)).downloaded_bytes, { timeout: 15_000 }).toBeGreaterThanOrEqual(3 * MiB);
  await expect.poll(async () => (await usageOf(`session_id=${a.id}`)).uploaded_bytes, { timeout: 15_000 }).toBeGreaterThanOrEqual(MiB);
  await expect.poll(async () => (await usageOf(`session_id=${b.id}`)).downloaded_bytes, { timeout: 15_000 }).toBeGreaterThanOrEqual(MiB);
  const aTotals = await usageOf(`session_id=${a.id}`);

  // 1. Session detail: the chart of this session, last 24 hours (the default), hourly bars.
  await app.openSession(a.id);
  const card = page.getByRole('region', { name: 'Usage history' });
  const chart = card.getByTestId('usage-chart');
  await expect(chart).toHaveAttribute('data-range', '24h');
  await expect(chart).toHaveAttribute('data-step', 'hour');
  await expect(chart).toHaveAttribute('data-downloaded', String(aTotals.downloaded_bytes));
  await expect(chart).toHaveAttribute('data-uploaded', String(aTotals.uploaded_bytes));
  await expect(card.getByRole('radio', { name: 'Last 24 hours' })).toBeChecked();
  // Axis in bytes, legend with both directions, and a summary in words.
  await expect(card.locator('.usage-plot .recharts-cartesian-axis-tick-value').filter({ hasText: /MB|KB/ }).first()).toBeVisible();
  await expect(card.locator('.usage-legend')).toContainText('↓ Download 3.');
  await expect(card.locator('.usage-legend')).toContainText('↑ Upload 1.');
  await expect(card.locator('figcaption')).toContainText('This session, last 24 hours: downloaded 3.');
  // Hover over the bars: the tooltip names the hour and both values.
  const bar = card.locator('.usage-bar-down .recharts-rectangle').last();
  await bar.hover();
  const tip = card.locator('.usage-tooltip');
  await expect(tip).toBeVisible();
  await expect(tip).toContainText(/↓ Download 3\.\d+ MB/);
  await expect(tip).toContainText(/↑ Upload 1\.\d+ MB/);
  const hoverShot = testInfo.outputPath('light-session-tooltip.png');
  await card.screenshot({ path: hoverShot });
  await testInfo.attach('light session tooltip', { path: hoverShot, contentType: 'image/png' });
  // The table alternative lists the bucket with the bytes.
  await card.getByText('Show the numbers as a table').click();
  const table = card.getByRole('table', { name: /Usage of this session per hour, last 24 hours/ });
  await expect(table.getByRole('row')).toHaveCount(2);
  await expect(table.getByRole('cell').nth(2)).toHaveAttribute('data-value', String(aTotals.downloaded_bytes));
  expect(await unnamed(page)).toEqual([]);
  await card.getByText('Show the numbers as a table').click();
  await shoot(page, testInfo, 'session-detail', card);
  if (desktop) {
    // The desktop window asked main through the preload bridge (`app:usage`), and main answered
    // from the API with this session's buckets.
    const calls = desktop.state.invoked.filter((i) => i.channel === 'app:usage');
    const mine = calls.find((c) => (c.args[0] as { session_id?: string }).session_id === a.id);
    expect(mine, 'an app:usage call for the session').toBeTruthy();
    expect(mine!.args[0]).toMatchObject({ session_id: a.id, step: 'hour' });
    expect(mine!.result).toMatchObject({ ok: true, value: { step: 'hour', totals: aTotals } });
  }

  // 2. Range switching: by mouse to the last hour (minute bars), by keyboard (arrow keys in the radio group) on.
  await card.getByRole('radio', { name: 'Last hour' }).click();
  await expect(chart).toHaveAttribute('data-range', '1h');
  await expect(chart).toHaveAttribute('data-step', 'minute');
  await expect(chart).toHaveAttribute('data-downloaded', String(aTotals.downloaded_bytes));
  await expect(card.locator('.usage-legend')).toContainText('Bytes per minute');
  await shoot(page, testInfo, 'session-last-hour', card);
  await card.getByRole('radio', { name: 'Last hour' }).focus();
  await page.keyboard.press('ArrowRight');
  await expect(card.getByRole('radio', { name: 'Last 24 hours' })).toBeChecked();
  await page.keyboard.press('ArrowRight');
  await expect(card.getByRole('radio', { name: 'Last 7 days' })).toBeChecked();
  await expect(chart).toHaveAttribute('data-range', '7d');
  await expect(chart).toHaveAttribute('data-step', 'hour');
  await shoot(page, testInfo, 'session-7-days', card);
  await card.getByRole('radio', { name: 'Last 7 days' }).focus();
  await page.keyboard.press('ArrowRight');
  await expect(chart).toHaveAttribute('data-range', '30d');
  await expect(chart).toHaveAttribute('data-step', 'day');
  await expect(chart).toHaveAttribute('data-downloaded', String(aTotals.downloaded_bytes));
  await shoot(page, testInfo, 'session-30-days', card);
  await card.getByRole('radio', { name: 'Last 24 hours' }).click();
  await expect(chart).toHaveAttribute('data-range', '24h');

  // 3. The client page, reached from the sessions list by the client id: its sessions and its chart.
  await app.go('Sessions');
  await page.getByText(/^Clients and subscriptions/).click();
  await page.getByRole('link', { name: `Client ${alice}`, exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: `Client ${alice}` })).toBeVisible();
  const clientCard = page.getByRole('region', { name: 'Usage history' });
  await expect(clientCard.getByTestId('usage-chart')).toHaveAttribute('data-downloaded', String(aTotals.downloaded_bytes));
  await expect(clientCard.locator('figcaption')).toContainText(`Client ${alice}, last 24 hours: downloaded 3.`);
  await expect(page.getByRole('list', { name: `Sessions of ${alice}` }).getByRole('link', { name: a.id.slice(0, 8) })).toBeVisible();
  await shoot(page, testInfo, 'client', clientCard);

  // 4. The dashboard: the customer's totals and the top clients (alice above bob; the other
  // tests of this file may add clients of their own), each a link to its page.
  await page.getByRole('navigation').getByRole('link', { name: 'Dashboard', exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Dashboard' })).toBeVisible();
  const all = await usageOf('');
  expect(all.downloaded_bytes).toBeGreaterThanOrEqual(4 * MiB);
  await expect(page.getByTestId('total-downloaded')).toHaveAttribute('data-value', String(all.downloaded_bytes));
  await expect(page.getByTestId('total-uploaded')).toHaveAttribute('data-value', String(all.uploaded_bytes));
  const top = page.getByRole('table', { name: 'Top clients, last 24 hours' });
  const rows = top.locator('tbody tr');
  await expect(top.locator(`tr[data-client-id="${alice}"]`)).toBeVisible();
  await expect(top.locator(`tr[data-client-id="${bob}"]`)).toBeVisible();
  const order = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-client-id')));
  expect(order.indexOf(alice)).toBeLessThan(order.indexOf(bob));
  await expect(top.locator(`tr[data-client-id="${quiet}"]`)).toHaveCount(0);
  await expect(page.getByTestId('usage-chart')).toHaveAttribute('data-downloaded', String(all.downloaded_bytes));
  expect(await unnamed(page)).toEqual([]);
  await shoot(page, testInfo, 'dashboard', page.locator('main'));
  // The range picker of the dashboard by keyboard too.
  await page.getByRole('radio', { name: 'Last 24 hours' }).focus();
  await page.keyboard.press('ArrowLeft');
  await expect(page.getByRole('radio', { name: 'Last hour' })).toBeChecked();
  await expect(page.getByRole('table', { name: 'Top clients, last hour' })).toBeVisible();
  await page.getByRole('radio', { name: 'Last 24 hours' }).click();
  await top.getByRole('link', { name: `Client ${bob}: sessions and usage` }).click();
  await expect(page.getByRole('heading', { level: 1, name: `Client ${bob}` })).toBeVisible();
  await expect(page.getByRole('region', { name: 'Usage history' }).getByTestId('usage-chart')).toHaveAttribute('data-downloaded', /^\d{7,}$/);

  // 5. The empty state: a session that never carried a byte.
  await app.openSession(q.id);
  const quietCard = page.getByRole('region', { name: 'Usage history' });
  await expect(quietCard.getByText('No traffic in this range', { exact: true })).toBeVisible();
  await expect(quietCard.getByTestId('usage-chart')).toHaveAttribute('data-downloaded', '0');
  await expect(quietCard.locator('.recharts-surface')).toHaveCount(0);
  await expect(quietCard.locator('figcaption')).toHaveText('No traffic of this session in the last 24 hours.');
  await shoot(page, testInfo, 'session-empty', quietCard);
});

test('usage chart: a refused request is said in words, and Try again asks again', async ({ app }, testInfo) => {
  const page = app.page;
  await app.waitReady();
  // A client id the API refuses (spaces are not in its pattern): GET /v2/usage answers 400.
  const bad = 'bad id with spaces';
  await page.evaluate((c) => (location.hash = `#/clients/${encodeURIComponent(c)}`), bad);
  await expect(page.getByRole('heading', { level: 1, name: `Client ${bad}` })).toBeVisible();
  const card = page.getByRole('region', { name: 'Usage history' });
  await expect(card.getByRole('alert')).toContainText('The usage could not be loaded');
  await expect(card.getByRole('alert')).toContainText(/client.id/i);
  await shoot(page, testInfo, 'client-error', card);
  await card.getByRole('button', { name: 'Try again' }).click();
  await expect(card.getByRole('alert')).toContainText('The usage could not be loaded');
});

test('desktop: main refuses a usage call with unknown keys or non-string values', async ({ app, desktop }, testInfo) => {
  test.skip(testInfo.project.name !== 'desktop', 'the IPC router is the desktop app\'s');
  await app.waitReady();
  const answers = await app.page.evaluate(async () => {
    const bridge = (window as unknown as { app: { usage(q: unknown): Promise<{ ok: boolean; error?: { code: string } }> } }).app;
    return [await bridge.usage({ client_id: 'x', evil: 'y' }), await bridge.usage({ from: 5 }), await bridge.usage({ step: 'hour' })];
  });
  expect(answers[0]).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
  expect(answers[1]).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
  expect(answers[2]).toMatchObject({ ok: true });
  expect(desktop!.state.invoked.filter((i) => i.channel === 'app:usage').length).toBeGreaterThanOrEqual(3);
});
