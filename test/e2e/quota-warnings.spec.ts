// Quota warnings before a client is cut, in the window: a client's download cap (its override,
// set through the API) filled by real traffic through the HTTP proxy; the client's page, the
// session detail and the Clients list say "… has used NN % of the download cap (… of …)" past
// 50 %, and "has used all of …" at 100 %, from the client record alone (no stream event).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { test, expect } from './fixtures.ts';
import { startOrigin } from './vless.ts';

const fetchVia = async (proxy: string, url: string) =>
  (await promisify(execFile)('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '10', '-x', proxy, url]).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }))).stdout;

test('the client page, the session detail and the Clients list warn at 50 % and at 100 % of a cap', async ({ app, backend }) => {
  const page = app.page;
  await app.waitReady();
  const client = `quota-warn-${Date.now()}`;
  const id = await app.createSession({ clientId: client, reusable: true });
  expect((await backend.api('PATCH', `/clients/${encodeURIComponent(client)}/limits`, { downloaded_bytes: 200_000 })).status).toBe(200);
  const info = (await backend.api<{ public_host: string; proxy_port: number }>('GET', '/server-info')).body;
  const proxy = `http://${id}:${id}@${info.public_host}:${info.proxy_port}`;
  const origin = await startOrigin();
  try {
    expect(await fetchVia(proxy, `${origin.url}/bytes?n=130000`)).toBe('200');
    await expect.poll(async () => (await backend.api<{ downloaded_bytes: number }>('GET', `/sessions/${id}/status`)).body.downloaded_bytes).toBeGreaterThanOrEqual(130_000);

    await app.openClient(client);
    const warn = page.getByTestId('quota-warnings');
    await expect(warn).toContainText(new RegExp(`^${client} has used (6[5-9]|7\\d) % of the download cap \\(\\d+\\.\\d KB of 195\\.3 KB\\)\\.$`));
    await expect(warn.getByRole('status')).toHaveAttribute('data-threshold', '50');
    await page.evaluate((sid) => (location.hash = `#/sessions/${sid}`), id);
    await expect(page.getByTestId('quota-warnings')).toContainText(`${client} has used`);
    await app.go('Clients');
    await expect(page.getByTestId('quota-banner')).toContainText(`${client} has used`);

    // Past the cap: "all of", and new connections refused.
    await fetchVia(proxy, `${origin.url}/bytes?n=100000`);
    await app.openClient(client);
    await expect(page.getByTestId('quota-warnings')).toContainText(`${client} has used all of the download cap (195.3 KB of 195.3 KB): new connections are refused until the cap is raised.`, { timeout: 15_000 });
    await expect(page.getByTestId('quota-warnings').getByRole('status')).toHaveAttribute('data-threshold', '100');
  } finally {
    await origin.close();
  }
});
