// Periodic caps and expiry in the window: a daily client cap reached by real v2ray
// traffic shows "Over quota until <next midnight>" on the session; when the day turns (the
// backend's wall clock moved ahead: it runs in this worker) the notice goes by itself and the
// same session downloads again. A session with expires_at shows when it expires. The Limits
// screen offers the reset period. Screenshots in light and dark.
import { test, expect } from './fixtures.ts';
import { setWallClock } from '../../server/time.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from './vless.ts';

const DAY = 86_400_000;

test('over quota until the day turns, then served again; expiry shown', async ({ app, backend }, testInfo) => {
  test.setTimeout(90_000);
  const page = app.page;
  let shift = 0;
  setWallClock(() => Date.now() + shift);
  const client = 'quota-daily';
  const origin = await startOrigin();
  let v2ray: Awaited<ReturnType<typeof startV2ray>> | undefined;
  try {
    await app.waitReady();
    // The Limits screen offers the period; the cap itself is set through the API for this client.
    await app.go('Limits');
    await expect(page.getByLabel('Byte caps renew')).toBeVisible();
    expect((await backend.api('PATCH', '/customer/limits/client', { downloaded_bytes: 300_000, reset_period: 'day' })).status).toBe(200);

    const id = await app.createSession({ clientId: client, reusable: true });
    const { body: session } = await backend.api<{ configuration: Configuration }>('GET', `/sessions/${id}`);
    v2ray = await startV2ray(session.configuration);
    const first = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${2 * 1024 * 1024}`, 15).done;
    expect(first.bytes).toBeLessThan(2 * 1024 * 1024);

    const nextDay = new Date(Math.floor(Date.now() / DAY) * DAY + DAY);
    const notice = page.getByTestId('over-quota');
    await expect(notice).toBeVisible({ timeout: 15_000 });
    await expect(notice).toContainText('Over quota until');
    await expect(notice).toContainText(String(nextDay.getDate()));
    await picturesInBothSchemes(page, testInfo, 'over quota', { take: (path) => page.screenshot({ path }) });

    // The day turns: no click, the notice goes and the same session downloads again.
    shift = nextDay.getTime() - Date.now() + 1000;
    await expect(notice).toHaveCount(0, { timeout: 15_000 });
    await expect
      .poll(async () => (await curlViaSocks(v2ray!.socksPort, `${origin.url}/bytes?n=100000`, 10).done).bytes, { timeout: 15_000 })
      .toBe(100_000);

    // A session with an expiry shows it.
    const expiring = await backend.api<{ id: string; expires_at: string }>('POST', '/sessions', { client_id: `${client}-exp`, zone: 'de-fra', expires_at: new Date(Date.now() + shift + 3_600_000).toISOString() });
    await app.openSession(expiring.body.id);
    await expect(page.getByTestId('expires-at')).toBeVisible();
  } finally {
    setWallClock();
    await v2ray?.stop();
    await origin.close();
    await backend.api('DELETE', '/customer/limits/client');
  }
});
