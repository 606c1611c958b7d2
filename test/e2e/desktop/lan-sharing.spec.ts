// "Let other devices connect" in the desktop app: the switch and the address picker (the LAN
// address preselected), the embedded server restarted on that address (links and the code to
// scan carry it, the TCP inbound there answers), then off again (the listener on that address
// is closed, links say 127.0.0.1). It needs the app's own embedded server, not a remote one.
import { connect } from 'node:net';
import { test, expect } from '../fixtures.ts';
import { AppPage } from '../pages.ts';

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

test('let other devices connect: on with the preselected address, a code to scan, then off', async ({ openEmbeddedDesktop }) => {
  test.setTimeout(90_000);
  // The address offered as this machine's LAN address is a loopback one (127.0.0.2): the
  // server really binds and answers there, and no test traffic leaves the machine.
  const desktop = await openEmbeddedDesktop({
    interfaces: {
      lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
      'vad-lan0': [{ address: '127.0.0.2', netmask: '255.0.0.0', family: 'IPv4', mac: '02:00:00:00:00:02', internal: false, cidr: '127.0.0.2/8' }],
    },
  });
  const app = new AppPage(desktop.page);
  const page = app.page;
  await app.waitReady();
  await app.createSession({ clientId: 'lan-phone', reusable: true });
  await app.go('Settings');
  const toggle = page.getByRole('switch', { name: 'Let other devices connect' });
  await expect(toggle).not.toBeChecked();
  const picker = page.getByLabel('Address other devices use', { exact: true });
  const address = await picker.inputValue();
  expect(address, 'the offered address is preselected').toBe('127.0.0.2');
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
