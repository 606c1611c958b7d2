// The proxy string builder: pick a country and a city from the catalogue, copy the
// credential, and use it with the real HTTP proxy (curl -x), which counts on the session.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { test, expect } from './fixtures.ts';
import { startOrigin } from './vless.ts';

// Asynchronous on purpose: the server and the origin live in this process.
const curlStatus = async (proxy: string, url: string) =>
  (await promisify(execFile)('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '10', '-x', proxy, url]).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }))).stdout;

test('build a geo-targeted proxy credential and use it', async ({ app, backend, readClipboard }) => {
  const page = app.page;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'proxy-carol', reusable: true });
  await app.go('Proxy');
  await page.getByLabel('Credential session').selectOption(id);
  await page.getByLabel('Country').selectOption('US');
  await page.getByLabel('City').selectOption('new york');
  await expect(page.getByTestId('proxy-user')).toHaveText(`${id}-cc-US-city-new.york`);
  await page.getByRole('button', { name: 'Copy proxy URL' }).click();
  const url = await readClipboard();
  expect(url).toContain(`${id}-cc-US-city-new.york:${id}@`);

  const origin = await startOrigin();
  try {
    expect(await curlStatus(url, `${origin.url}/bytes?n=50000`)).toBe('200');
    // A city outside the catalogue is refused with 412.
    const bad = url.replace('city-new.york', 'city-atlantis');
    expect(await curlStatus(bad, `${origin.url}/bytes?n=10`)).toBe('412');
    await expect.poll(async () => (await backend.api<{ downloaded_bytes: number }>('GET', `/sessions/${id}/status`)).body.downloaded_bytes).toBeGreaterThanOrEqual(50000);
  } finally {
    await origin.close();
  }
});
