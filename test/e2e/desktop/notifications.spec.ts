// Notifications the desktop app raises from its own event stream, with real VLESS traffic:
// a one-shot session ends when its connection closes ("Session ended"), and a session that
// reaches its byte cap is ended by the server ("Session reached its limit").
import { test, expect } from '../fixtures.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration } from '../vless.ts';

interface Created { id: string; zone: string; configuration: Configuration }

test('a notification when a session ends', async ({ backend, desktop, app }) => {
  const d = desktop!;
  await app.waitReady();
  const { body: s } = await backend.api<Created>('POST', '/sessions', { client_id: 'notify-ends', zone: 'de-fra', reusable: false });
  const origin = await startOrigin();
  const v2ray = await startV2ray(s.configuration);
  try {
    const r = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=200000`).done;
    expect(r.bytes).toBe(200000);
    await expect.poll(async () => (await backend.api<{ status: string }>('GET', `/sessions/${s.id}`)).body.status, { timeout: 15_000 }).toBe('ended');
    await expect
      .poll(() => d.state.notifications.filter((n) => n.body.startsWith('notify-ends ')), { timeout: 15_000 })
      .toEqual([expect.objectContaining({ title: 'Session ended', body: `notify-ends in ${s.zone}.` })]);
  } finally {
    await v2ray.stop();
    await origin.close();
  }
});

test('a notification when a session reaches its byte cap', async ({ backend, desktop, app }) => {
  const d = desktop!;
  await app.waitReady();
  const cap = 1024 * 1024;
  await backend.api('PATCH', '/customer/limits/session', { downloaded_bytes: cap });
  const origin = await startOrigin();
  const { body: s } = await backend.api<Created>('POST', '/sessions', { client_id: 'notify-cap', zone: 'de-fra', reusable: true });
  const v2ray = await startV2ray(s.configuration);
  try {
    const r = await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${4 * cap}`).done;
    expect(r.bytes).toBeLessThan(4 * cap); // cut at the cap
    await expect.poll(async () => (await backend.api<{ status: string }>('GET', `/sessions/${s.id}`)).body.status, { timeout: 15_000 }).toBe('ended');
    await expect
      .poll(() => d.state.notifications.filter((n) => n.body.startsWith('notify-cap ')), { timeout: 15_000 })
      .toEqual([expect.objectContaining({ title: 'Session reached its limit', body: `notify-cap in ${s.zone}: its byte limit is used up.` })]);
  } finally {
    await backend.api('DELETE', '/customer/limits/session');
    await v2ray.stop();
    await origin.close();
  }
});
