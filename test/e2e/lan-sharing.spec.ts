// "Let other devices connect" is a desktop feature (test/e2e/desktop/lan-sharing.spec.ts); in the
// browser the Settings card explains the command-line flags that do the same for `vpn-access serve`.
import { test, expect } from './fixtures.ts';

test('in the browser, the card gives the command that lets other devices connect', async ({ app }, testInfo) => {
  test.skip(testInfo.project.name !== 'web', 'the web explanation shows in the browser only');
  await app.waitReady();
  await app.go('Settings');
  await expect(app.page.getByRole('heading', { level: 2, name: 'Let other devices connect' })).toBeVisible();
  await expect(app.page.getByLabel('Command to let other devices connect')).toContainText(/vpn-access serve --host \S+ --public-host \S+ --egress lan/);
  await expect(app.page.getByRole('switch', { name: 'Let other devices connect' })).toHaveCount(0);
});
