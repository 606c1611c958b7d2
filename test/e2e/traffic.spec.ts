// Real VLESS traffic through v2ray: counters move live in the window, events arrive,
// pause stops the transfer and resume lets the client connect again.
import { test, expect } from './fixtures.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';

test('VLESS traffic moves the counters; pause stops it and resume lets it flow again', async ({ app, backend }) => {
  test.setTimeout(90_000);
  const page = app.page;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'traffic-bob', reusable: true });
  const { body: session } = await backend.api<{ configuration: Configuration }>('GET', `/sessions/${id}`);
  const origin = await startOrigin();
  const v2ray = await startV2ray(session.configuration);
  try {
    // 1. A download of 3 MiB: the window's counters move.
    const first = curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${3 * 1024 * 1024}`);
    const r1 = await first.done;
    expect(r1.code).toBe(0);
    expect(r1.bytes).toBe(3 * 1024 * 1024);
    await expect.poll(() => app.downloadedBytes(), { timeout: 15_000 }).toBeGreaterThanOrEqual(3 * 1024 * 1024);
    expect(await app.uploadedBytes()).toBeGreaterThan(0);

    // 2. Events arrive on the Events screen (start, stats, end of that connection).
    await app.go('Events');
    await expect(page.locator(`tr[data-event-type="session_start"]`).first()).toBeVisible({ timeout: 15_000 });
    await expect(page.locator(`tr[data-event-type="session_end"]`).first()).toBeVisible({ timeout: 15_000 });
    await page.getByLabel('Event type').selectOption('session_end');
    await expect(page.locator(`tr[data-event-type="session_start"]`)).toHaveCount(0);

    // 3. A slow transfer is running; Pause closes it and the counters stop.
    await app.openSession(id);
    const slow = curlViaSocks(v2ray.socksPort, `${origin.url}/slow?n=${64 * 1024 * 400}&ms=50`, 60);
    await expect.poll(() => app.downloadedBytes(), { timeout: 15_000 }).toBeGreaterThan(3 * 1024 * 1024 + 256 * 1024);
    await expect(page.locator('.badge-active')).toBeVisible();
    await app.pauseButton().click();
    await expect(app.resumeButton()).toBeEnabled();
    const r2 = await slow.done;
    expect(r2.bytes).toBeLessThan(64 * 1024 * 400); // the transfer was cut
    const atPause = (await backend.api<{ downloaded_bytes: number }>('GET', `/sessions/${id}/status`)).body.downloaded_bytes;
    // While paused, a new connection carries nothing.
    const refused = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=100000`, 5).done;
    expect(refused.bytes).toBe(0);
    await page.waitForTimeout(1500);
    expect((await backend.api<{ downloaded_bytes: number }>('GET', `/sessions/${id}/status`)).body.downloaded_bytes).toBe(atPause);

    // 4. Resume: the client connects again and the counters move on.
    await app.resumeButton().click();
    await expect(app.pauseButton()).toBeEnabled();
    const r3 = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${1024 * 1024}`).done;
    expect(r3.code).toBe(0);
    await expect.poll(() => app.downloadedBytes(), { timeout: 15_000 }).toBeGreaterThanOrEqual(atPause + 1024 * 1024);

    // 5. The session's timeline shows its events.
    await expect(page.getByRole('list', { name: 'Session events' }).getByText('Connection opened').first()).toBeVisible();
  } finally {
    await v2ray.stop();
    await origin.close();
  }
});
