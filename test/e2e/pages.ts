// Page objects: the app driven by its accessible names only (the same names held-out
// checks use), so the specs read like a person's steps.
import { expect, type Locator, type Page } from '@playwright/test';

export type NavName = 'Sessions' | 'Clients' | 'New session' | 'Dashboard' | 'Limits' | 'Events' | 'Proxy' | 'Settings';
export type LimitTab = 'Global' | 'Client' | 'Session';
export type LimitFieldName = 'Downloaded bytes' | 'Uploaded bytes' | 'Download speed' | 'Upload speed' | 'Max sessions' | 'Max reconnections' | 'Max devices';

export class AppPage {
  readonly page: Page;
  constructor(page: Page) {
    this.page = page;
  }

  nav(name: NavName): Locator {
    return this.page.getByRole('navigation').getByRole('link', { name, exact: true });
  }

  /** The header's Menu button: shown below 768 px, where it opens the navigation. */
  menuButton(): Locator {
    return this.page.getByRole('button', { name: 'Menu', exact: true });
  }

  async go(name: NavName): Promise<void> {
    const menu = this.menuButton();
    if ((await menu.isVisible()) && (await menu.getAttribute('aria-expanded')) !== 'true') await menu.click();
    await this.nav(name).click();
    await expect(this.page.getByRole('heading', { level: 1, name, exact: true })).toBeVisible();
  }

  async waitReady(): Promise<void> {
    await expect(this.nav('Sessions')).toBeVisible();
  }

  // ---- New session
  zone(): Locator {
    return this.page.getByLabel('Zone', { exact: true });
  }
  clientId(): Locator {
    return this.page.getByLabel('Client ID', { exact: true });
  }
  /** The default choice of the form (a radio button). */
  reusable(): Locator {
    return this.page.getByLabel('Reusable', { exact: true });
  }
  oneConnection(): Locator {
    return this.page.getByLabel('One connection, then ended', { exact: true });
  }

  /** Creates a session through the form (reusable unless `reusable: false`); returns its id (from the detail screen's address). */
  async createSession(opts: { clientId: string; zone?: string; reusable?: boolean }): Promise<string> {
    await this.go('New session');
    if (opts.zone) await this.zone().selectOption(opts.zone);
    await this.clientId().fill(opts.clientId);
    if (opts.reusable === false) await this.oneConnection().check();
    else await expect(this.reusable()).toBeChecked();
    await this.page.getByRole('button', { name: 'Create session' }).click();
    await expect(this.page.getByRole('button', { name: 'Copy link' })).toBeVisible();
    const hash = await this.page.evaluate(() => location.hash);
    const id = decodeURIComponent(hash.replace('#/sessions/', ''));
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    return id;
  }

  async openSession(id: string): Promise<void> {
    await this.page.evaluate((sid) => (location.hash = `#/sessions/${sid}`), id);
    await expect(this.page.getByRole('button', { name: 'Copy link' })).toBeVisible();
  }

  pauseButton(): Locator {
    return this.page.getByRole('button', { name: 'Pause', exact: true });
  }
  resumeButton(): Locator {
    return this.page.getByRole('button', { name: 'Resume', exact: true });
  }

  async downloadedBytes(): Promise<number> {
    return Number(await this.page.getByTestId('downloaded-bytes').getAttribute('data-value'));
  }
  async uploadedBytes(): Promise<number> {
    return Number(await this.page.getByTestId('uploaded-bytes').getAttribute('data-value'));
  }

  // ---- Client view and subscription
  async openClient(clientId: string): Promise<void> {
    await this.page.evaluate((c) => (location.hash = `#/clients/${encodeURIComponent(c)}`), clientId);
    await expect(this.page.getByRole('heading', { level: 1, name: `Client ${clientId}` })).toBeVisible();
  }
  subscriptionQr(): Locator {
    return this.page.getByRole('img', { name: 'QR code of the subscription URL' });
  }
  subscriptionUrl(): Locator {
    return this.page.getByTestId('subscription-url');
  }
  subscriptionButton(name: 'Turn on subscription' | 'Copy subscription URL' | 'Rotate URL' | 'Rotate now' | 'Cancel' | 'Turn off'): Locator {
    return this.page.getByRole('button', { name, exact: true });
  }
  importLink(app: 'v2rayNG' | 'Hiddify' | 'sing-box' | 'Clash Meta (Mihomo)'): Locator {
    return this.page.getByRole('link', { name: `Import into ${app}`, exact: true });
  }
  /** Turns the subscription on from the empty state; returns its URL as shown. */
  async turnOnSubscription(): Promise<string> {
    await expect(this.page.getByText('No subscription yet', { exact: true })).toBeVisible();
    await this.subscriptionButton('Turn on subscription').click();
    await expect(this.subscriptionQr()).toBeVisible();
    return (await this.subscriptionUrl().textContent()) ?? '';
  }

  // ---- Limits
  async limitsTab(tab: LimitTab): Promise<void> {
    await this.page.getByRole('tab', { name: tab, exact: true }).click();
    await expect(this.page.getByRole('tab', { name: tab, exact: true })).toHaveAttribute('aria-selected', 'true');
  }
  limitField(name: LimitFieldName): Locator {
    return this.page.getByLabel(name, { exact: true });
  }
  saveLimits(): Locator {
    return this.page.getByRole('button', { name: 'Save limits' });
  }
  deleteLimits(): Locator {
    return this.page.getByRole('button', { name: 'Delete limits' });
  }
}
