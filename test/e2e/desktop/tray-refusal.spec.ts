// The tray tells why a listed session's client gets nothing: a session paused from the tray,
// then a real v2ray connection refused, shows "Last refused <time>: paused" in its submenu
// (main reads the newest refusal of the sessions it lists every 10 s).
import { test, expect } from '../fixtures.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from '../vless.ts';

test('the tray shows the last refusal of a paused session', async ({ app, backend, desktop }) => {
  test.setTimeout(90_000);
  const d = desktop!;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'tray-refused', reusable: true });
  const { body: session } = await backend.api<{ configuration: Configuration; zone: string }>('GET', `/sessions/${id}`);
  const origin = await startOrigin();
  const v2ray = await startV2ray(session.configuration);
  try {
    const slow = curlViaSocks(v2ray.socksPort, `${origin.url}/slow?n=${64 * 1024 * 400}&ms=50`, 60);
    const label = new RegExp(`^tray-refused · ${session.zone}`);
    await expect.poll(() => d.trayItem([label, 'Pause'])?.enabled, { timeout: 15_000 }).toBe(true);
    d.clickTray([label, 'Pause']);
    await slow.done;
    await expect.poll(() => d.trayItem([label, 'Resume'])?.enabled, { timeout: 10_000 }).toBe(true);
    const refused = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=100000`, 5).done;
    expect(refused.bytes).toBe(0);
    await expect.poll(() => d.trayItem([label, /^Last refused .+: paused$/])?.enabled, { timeout: 25_000 }).toBe(false);
  } finally {
    await v2ray.stop();
    await origin.close();
    await backend.api('PATCH', `/sessions/${id}/resume`);
  }
});
