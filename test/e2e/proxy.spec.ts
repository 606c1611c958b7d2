// The proxy string builder: pick a country and a city from the catalogue, turn on a sticky
// session (a generated key, Regenerate, its lifetime, strict), choose the protocol, copy the
// credential and the ready curl lines, and use them with the real proxy (curl, over SOCKS5 and
// HTTP on the same port), which counts on the session. The user name is the shared grammar's
// (buildProxyUser). Screenshots in light and dark (test-results/proxy-*/), and nothing wider
// than a 390 px window.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { test, expect } from './fixtures.ts';
import { overflowOf } from './layout.ts';
import { picturesInBothSchemes } from './schemes.ts';
import { startOrigin } from './vless.ts';

// Asynchronous on purpose: the server and the origin live in this process.
const curl = async (args: string[]) =>
  (await promisify(execFile)('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '10', ...args]).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }))).stdout;
const curlStatus = (proxy: string, url: string) => curl(['-x', proxy, url]);

/** A copied curl line run as it is, against `url` instead of its example.com. */
const runCurlLine = (line: string, url: string) => {
  const args = line.split(' ');
  expect(args[0]).toBe('curl');
  expect(args.at(-1)).toBe('https://example.com');
  return curl([...args.slice(1, -1), url]);
};

test('build a geo-targeted proxy credential and use it', async ({ app, backend, readClipboard }) => {
  const page = app.page;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'proxy-carol', reusable: true });
  await app.go('Proxy');
  await page.getByLabel('Credential session').selectOption(id);
  await page.getByLabel('Country').selectOption('US');
  await page.getByLabel('City').selectOption('new york');
  await expect(page.getByTestId('proxy-user')).toHaveText(`${id}-cc-US-city-new.york`);
  // The password is the session id, copied on its own for clients that ask for the two apart.
  await expect(page.getByTestId('proxy-password')).toHaveText(id);
  await page.getByRole('button', { name: 'Copy password' }).click();
  expect(await readClipboard()).toBe(id);
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

test('a sticky credential with its curl lines, used through the proxy', async ({ app, backend, readClipboard }, testInfo) => {
  const page = app.page;
  await app.waitReady();
  const id = await app.createSession({ clientId: 'proxy-sticky', reusable: true });
  await app.go('Proxy');
  await page.getByLabel('Credential session').selectOption(id);
  await page.getByLabel('Country').selectOption('US');
  await page.getByLabel('City').selectOption('new york');

  // Sticky: a generated key of 12 letters or digits; Regenerate makes another.
  await page.getByLabel('Keep the same exit').check();
  const key = page.getByTestId('proxy-sessid');
  const first = (await key.textContent())!;
  expect(first).toMatch(/^[a-z0-9]{12}$/);
  await page.getByRole('button', { name: 'Regenerate the session key' }).click();
  await expect(key).not.toHaveText(first);
  const sessid = (await key.textContent())!;
  await page.getByLabel('Lifetime (minutes)').fill('30');
  await expect(page.getByTestId('proxy-user')).toHaveText(`${id}-cc-US-city-new.york-sessid-${sessid}-sesstime-30`);
  await page.getByLabel('Strict: fail rather than move to another exit').check();
  const user = `${id}-cc-US-city-new.york-sessid-${sessid}-sesstime-30-strict`;
  await expect(page.getByTestId('proxy-user')).toHaveText(user);
  // A lifetime out of range: the shared grammar's words, no credential.
  await page.getByLabel('Lifetime (minutes)').fill('5000');
  await expect(page.getByRole('alert')).toContainText('1 to 1440 minutes');
  await page.getByLabel('Lifetime (minutes)').fill('30');

  // SOCKS5: the same port and credentials; the URL and the curl line for it.
  await page.getByRole('radio', { name: 'SOCKS5' }).check();
  const info = (await backend.api<{ public_host: string; proxy_port: number }>('GET', '/server-info')).body;
  const hostPort = `${info.public_host}:${info.proxy_port}`;
  await expect(page.getByTestId('proxy-url')).toHaveText(`socks5h://${user}:${id}@${hostPort}`);
  await expect(page.getByTestId('proxy-curl-socks5')).toHaveText(`curl --socks5-hostname ${hostPort} --proxy-user ${user}:${id} https://example.com`);
  await page.getByRole('button', { name: 'Copy the curl command for SOCKS5' }).click();
  const socksLine = await readClipboard();
  expect(socksLine).toBe(`curl --socks5-hostname ${hostPort} --proxy-user ${user}:${id} https://example.com`);
  await page.getByRole('radio', { name: 'HTTP' }).check();
  await expect(page.getByTestId('proxy-url')).toHaveText(`http://${user}:${id}@${hostPort}`);

  // The copied curl lines, run against a local origin: the sticky credential carries traffic
  // over SOCKS5 and over HTTP, on the same port, counted on the session.
  await page.getByRole('button', { name: 'Copy the curl command for HTTP' }).click();
  const line = await readClipboard();
  expect(line).toBe(`curl -x http://${user}:${id}@${hostPort} https://example.com`);
  const origin = await startOrigin();
  try {
    expect(await runCurlLine(socksLine, `${origin.url}/bytes?n=40000`)).toBe('200');
    await expect.poll(async () => (await backend.api<{ downloaded_bytes: number }>('GET', `/sessions/${id}/status`)).body.downloaded_bytes).toBeGreaterThanOrEqual(40000);
    expect(await runCurlLine(socksLine, `${origin.url}/bytes?n=40000`)).toBe('200');
    expect(await runCurlLine(line, `${origin.url}/bytes?n=40000`)).toBe('200');
    await expect.poll(async () => (await backend.api<{ downloaded_bytes: number }>('GET', `/sessions/${id}/status`)).body.downloaded_bytes).toBeGreaterThanOrEqual(120000);
  } finally {
    await origin.close();
  }
  await picturesInBothSchemes(page, testInfo, 'proxy');

  // 390 px: nothing wider than the window.
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    await expect(page.getByTestId('proxy-curl-http')).toBeVisible();
    expect(await overflowOf(page), 'proxy at 390 px').toEqual([]);
    await picturesInBothSchemes(page, testInfo, 'phone proxy');
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});
