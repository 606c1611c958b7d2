// "Let other devices connect" in the desktop app: the switch and the address picker (the LAN
// address preselected), the server restarted on that address (links and the code to scan
// carry it, the TCP inbound there answers), then off again (the listener on that address is
// closed, links say 127.0.0.1). Only the `desktop` project runs the real main process, whose
// embedded server this rebinds; in the browser the card explains the command-line flags instead.
import { connect } from 'node:net';
import { test, expect } from './fixtures.ts';

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const t = setTimeout(() => {
      s.destroy();
      resolve(false);
    }, 3000);
    s.on('connect', () => {
      clearTimeout(t);
      s.destroy();
      resolve(true);
    });
    s.on('error', () => {
      clearTimeout(t);
      resolve(false);
    });
  });
}

test('let other devices connect: on with the preselected address, a code to scan, then off', async ({ app }, testInfo) => {
  test.skip(testInfo.project.name !== 'desktop', 'LAN sharing is a desktop feature');
  const page = app.page;
  await app.waitReady();
  await app.createSession({ clientId: 'lan-phone', reusable: true });
  await app.go('Settings');
  const toggle = page.getByRole('switch', { name: 'Let other devices connect' });
  await expect(toggle).not.toBeChecked();
  const picker = page.getByLabel('Address other devices use', { exact: true });
  const address = await picker.inputValue();
  expect(address, 'an address is preselected').not.toBe('');
  // The preselected one is the LAN address (a private IPv4) whenever the machine has one.
  if ((await picker.locator('option', { hasText: 'local network' }).count()) > 0) {
    expect(await picker.locator(`option[value="${address}"]`).textContent()).toContain('local network');
  }

  await toggle.check();
  await expect(page.getByTestId('lan-state')).toHaveText(`On: the server listens on ${address}; egress policy lan.`, { timeout: 30_000 });
  const host = address.includes(':') ? `[${address}]` : address;
  const qr = page.getByRole('img', { name: 'QR code to scan: session link' });
  await expect(qr).toBeVisible();
  const link = (await qr.getAttribute('data-qr-text')) ?? '';
  expect(link).toContain(`@${host}:`);
  const src = (await qr.getAttribute('src')) ?? '';
  expect(src.length).toBeGreaterThan(1000);
  await app.go('Sessions');
  await app.go('Settings');
  await expect(page.getByRole('switch', { name: 'Let other devices connect' })).toBeChecked();
  const tcpPort = Number(await page.locator('dt', { hasText: 'VLESS TCP port' }).locator('xpath=following-sibling::dd').textContent());
  expect(await reachable(address, tcpPort)).toBe(true);

  await page.getByRole('switch', { name: 'Let other devices connect' }).uncheck();
  await expect(page.getByTestId('lan-state')).toContainText('Off: only this computer can connect', { timeout: 30_000 });
  expect(await reachable(address, tcpPort)).toBe(false);
  await app.go('Sessions');
  await page.getByRole('row', { name: /Session for lan-phone/ }).first().click();
  await expect(page.getByTestId('configuration-link')).toContainText('@127.0.0.1:');
});

test('in the browser, the card gives the command that lets other devices connect', async ({ app }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'the web explanation shows in the browser only');
  await app.waitReady();
  await app.go('Settings');
  await expect(app.page.getByRole('heading', { level: 2, name: 'Let other devices connect' })).toBeVisible();
  await expect(app.page.getByLabel('Command to let other devices connect')).toContainText(/vpn-access serve --host \S+ --public-host \S+ --egress lan/);
  await expect(app.page.getByRole('switch', { name: 'Let other devices connect' })).toHaveCount(0);
});
