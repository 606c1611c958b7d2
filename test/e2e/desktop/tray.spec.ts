// What only the desktop has, around the window: the tray. With real VLESS traffic through
// v2ray, the tray lists the active session, its tooltip shows the live speed, and its menu
// pauses (cutting the transfer) and resumes the session; closing the window hides it to
// the tray, and the tray's Open brings it back.
import { test, expect } from '../fixtures.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from '../vless.ts';

const UNITS: Record<string, number> = { 'B/s': 1, 'KB/s': 1024, 'MB/s': 1024 ** 2, 'GB/s': 1024 ** 3 };

/** The download speed in the tray tooltip, in bytes per second (0 when none is shown). */
function tooltipDown(tip: string): number {
  const m = /↓ ([\d.]+) (B\/s|KB\/s|MB\/s|GB\/s)/.exec(tip);
  return m ? Number(m[1]) * UNITS[m[2]] : 0;
}

test('the tray shows the live speed, and pauses and resumes a session', async ({ app, backend, desktop }) => {
  test.setTimeout(90_000);
  const d = desktop!;
  const page = app.page;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'tray-dana', reusable: true });
  const { body: session } = await backend.api<{ configuration: Configuration; zone: string }>('GET', `/sessions/${id}`);
  const label = new RegExp(`^tray-dana · ${session.zone}`);
  const origin = await startOrigin();
  const v2ray = await startV2ray(session.configuration);
  try {
    // A slow transfer (about 1.25 MB/s) runs: the tray lists the session with Pause, and
    // the tooltip counts it and shows a download speed from the live events.
    const total = 64 * 1024 * 600;
    const slow = curlViaSocks(v2ray.socksPort, `${origin.url}/slow?n=${total}&ms=50`, 60);
    await expect.poll(() => d.trayItem([label, 'Pause'])?.enabled, { timeout: 15_000 }).toBe(true);
    await expect.poll(() => d.tooltip, { timeout: 15_000 }).toMatch(/VPN Access Desk — \d+ active\n↑ .+ {2}↓ .+/);
    await expect.poll(() => tooltipDown(d.tooltip), { timeout: 15_000 }).toBeGreaterThan(100 * 1024);
    expect(d.state.tray!.tooltips.length).toBeGreaterThan(1); // it moved while the transfer ran

    // Pause from the tray: the transfer is cut, the server says paused, the window follows.
    d.clickTray([label, 'Pause']);
    const cut = await slow.done;
    expect(cut.bytes).toBeLessThan(total);
    await expect.poll(async () => (await backend.api<{ paused: boolean }>('GET', `/sessions/${id}/status`)).body.paused).toBe(true);
    await expect.poll(() => d.trayItem([new RegExp(`^tray-dana · ${session.zone} \\(paused\\)`), 'Resume'])?.enabled, { timeout: 10_000 }).toBe(true);
    await page.reload();
    await expect(app.resumeButton()).toBeEnabled();
    const refused = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=100000`, 5).done;
    expect(refused.bytes).toBe(0);

    // Resume from the tray: traffic flows again.
    d.clickTray([/^tray-dana/, 'Resume']);
    await expect.poll(async () => (await backend.api<{ paused: boolean }>('GET', `/sessions/${id}/status`)).body.paused).toBe(false);
    const again = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${1024 * 1024}`).done;
    expect(again.code).toBe(0);
    expect(again.bytes).toBe(1024 * 1024);
    await page.reload();
    await expect(app.pauseButton()).toBeEnabled();
  } finally {
    await v2ray.stop();
    await origin.close();
  }
});

test('closing the window hides it to the tray; Open brings it back', async ({ app, desktop }) => {
  const d = desktop!;
  await app.waitReady();
  const win = d.window;
  expect(win.visible).toBe(true);
  const hides = win.hideCount;
  win.close(); // the window manager's close button
  expect(win.visible).toBe(false);
  expect(win.hideCount).toBe(hides + 1);
  expect(win.isDestroyed()).toBe(false);
  // The app still runs behind the tray: the page lives on, and the tray still has Open and Quit.
  expect(d.trayLabels()).toEqual(expect.arrayContaining(['Open VPN Access Desk', 'Quit']));
  await expect(app.nav('Sessions')).toBeVisible();
  const focus = win.focusCount;
  d.clickTray(['Open VPN Access Desk']);
  expect(win.visible).toBe(true);
  expect(win.focusCount).toBe(focus + 1);
  expect(d.state.windows.filter((w) => !w.isDestroyed())).toHaveLength(1); // the same window, not a new one
});
