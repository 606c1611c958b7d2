// Settings → Backup in the desktop app, with its embedded server: "Back up…" into a folder the person
// picks in the native dialog (cancel does nothing), a damaged backup refused before anything changes,
// then "Restore from a backup…" after the confirmation: the sessions made after the backup are gone,
// what was replaced is kept aside, the app stays signed in. A headless server's backup (another
// customer, a token the app never had) restored into a fresh app: the window shows that customer, with
// a new owner token, and still does after a restart. "Back up every day" turned on (a backup at once) and off.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, expect } from '../fixtures.ts';
import { AppPage } from '../pages.ts';
import { launchDesktop, ROOT } from './harness.ts';

const backupCard = (app: AppPage) => app.page.getByRole('region', { name: 'Backup' });

test('back up while the app runs, refuse a damaged backup, restore after the confirmation', async ({ openEmbeddedDesktop }) => {
  test.setTimeout(120_000);
  const root = mkdtempSync(join(tmpdir(), 'vad-desktop-backup-'));
  try {
    const desktop = await openEmbeddedDesktop();
    const app = new AppPage(desktop.page);
    await app.waitReady();
    await app.createSession({ clientId: 'kept-1' });
    await app.go('Settings');
    const card = backupCard(app);
    await expect(card.getByText(join(desktop.userData, 'server'))).toBeVisible();

    // Cancelled in the folder dialog: nothing happens, nothing is said.
    await card.getByRole('button', { name: 'Back up…' }).click();
    await expect(card.getByRole('button', { name: 'Back up…' })).toBeEnabled();
    expect(desktop.state.dialogsShown).toHaveLength(1);
    expect(desktop.state.dialogsShown[0]).toMatchObject({ kind: 'open', parented: true, options: { properties: ['openDirectory', 'createDirectory'] } });
    await expect(card.getByTestId('last-backup')).toHaveCount(0);

    desktop.state.folderAnswers.push(root);
    await card.getByRole('button', { name: 'Back up…' }).click();
    await expect(card.getByTestId('last-backup')).toContainText(root, { timeout: 30_000 });
    const [made] = readdirSync(root).filter((f) => f.startsWith('vpn-access-backup-'));
    const backup = join(root, made!);
    const manifest = JSON.parse(readFileSync(join(backup, 'backup.json'), 'utf8')) as { files: { path: string }[] };
    expect(manifest.files.map((f) => f.path)).toEqual(expect.arrayContaining(['vpn-access.db', 'webhook.key']));
    // What a running one is doing reaches the window through the bridge (test/unit/data-backups.test.ts: its words); none runs now.
    expect(await desktop.page.evaluate(() => (window as unknown as { app: { backupProgress(): Promise<unknown> } }).app.backupProgress())).toEqual({ ok: true, value: null });

    await app.createSession({ clientId: 'after-backup' });

    // A damaged backup: refused with its reason before the confirmation, and nothing changes.
    const damaged = join(root, 'damaged');
    cpSync(backup, damaged, { recursive: true });
    writeFileSync(join(damaged, 'webhook.key'), 'AAAA' + readFileSync(join(damaged, 'webhook.key'), 'utf8').slice(4));
    await app.go('Settings');
    desktop.state.folderAnswers.push(damaged);
    await card.getByRole('button', { name: 'Restore from a backup…' }).click();
    await expect(card.getByRole('alert')).toContainText('the backup is damaged: webhook.key is not the file it was');
    expect(desktop.state.dialogsShown.filter((d) => d.kind === 'message')).toHaveLength(0);

    // The real one, confirmed: the server restarts on it.
    desktop.state.folderAnswers.push(backup);
    desktop.state.buttonAnswers.push(0);
    await card.getByRole('button', { name: 'Restore from a backup…' }).click();
    await expect(card.getByTestId('last-restore')).toContainText('The data it replaced is kept in', { timeout: 30_000 });
    await expect(card.getByTestId('last-restore')).not.toContainText('new owner token');
    const question = desktop.state.dialogsShown.find((d) => d.kind === 'message')!;
    expect(question.options).toMatchObject({ type: 'warning', buttons: ['Restore', 'Cancel'], defaultId: 1, cancelId: 1 });
    expect(String(question.options.message)).toMatch(/^Replace the app’s data with the backup of /);
    expect(readdirSync(join(desktop.userData, 'server')).some((f) => f.startsWith('replaced-'))).toBe(true);

    await app.go('Sessions');
    await expect(app.page.getByRole('row', { name: /Session for kept-1/ })).toHaveCount(1);
    await expect(app.page.getByRole('row', { name: /Session for after-backup/ })).toHaveCount(0);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a headless server's backup restored into a fresh app: its customer, a new owner token, kept after a restart", async ({ browser }) => {
  test.setTimeout(120_000);
  const root = mkdtempSync(join(tmpdir(), 'vad-desktop-restore-'));
  const userData = mkdtempSync(join(tmpdir(), 'vad-desktop-'));
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'server', 'cli.ts'), ...args], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
  };
  try {
    cli('token', 'create', '--customer', 'acme', '--role', 'owner', '--data-dir', join(root, 'headless'));
    cli('backup', '--data-dir', join(root, 'headless'), '--out', join(root, 'backup'));

    let desktop = await launchDesktop({ browser, userData });
    let app = new AppPage(desktop.page);
    await app.waitReady();
    await app.go('Settings');
    desktop.state.folderAnswers.push(join(root, 'backup'));
    desktop.state.buttonAnswers.push(0);
    await backupCard(app).getByRole('button', { name: 'Restore from a backup…' }).click();
    const said = backupCard(app).getByTestId('last-restore');
    await expect(said).toContainText('(customer acme)', { timeout: 30_000 });
    await expect(said).toContainText('a new owner token was made');
    await expect(app.page.getByTitle('The API token in use signs in as this customer (role)')).toHaveText('acme (owner)');
    await desktop.quit();

    desktop = await launchDesktop({ browser, userData });
    app = new AppPage(desktop.page);
    await app.waitReady();
    await app.go('Settings');
    await expect(app.page.getByTitle('The API token in use signs in as this customer (role)')).toHaveText('acme (owner)');
    await desktop.quit();
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(userData, { recursive: true, force: true });
  }
});

test('back up every day: on into a chosen folder (a backup at once), then off', async ({ openEmbeddedDesktop }) => {
  test.setTimeout(90_000);
  const daily = mkdtempSync(join(tmpdir(), 'vad-desktop-daily-'));
  try {
    const desktop = await openEmbeddedDesktop();
    const app = new AppPage(desktop.page);
    await app.waitReady();
    await app.go('Settings');
    const card = backupCard(app);
    const daySwitch = card.getByRole('switch', { name: 'Back up every day' });
    await expect(daySwitch).not.toBeChecked();
    // Cancelled in the folder dialog: still off.
    await daySwitch.click();
    await expect(daySwitch).not.toBeChecked();
    await expect(daySwitch).toBeEnabled();

    desktop.state.folderAnswers.push(daily);
    await daySwitch.click();
    await expect(daySwitch).toBeChecked({ timeout: 30_000 });
    await expect(card.getByTestId('auto-backup')).toContainText(`Into ${daily}, keeping the newest 7, while the app runs. Last: `);
    await expect(card.getByTestId('auto-backup')).toContainText('Next: ');
    expect(readdirSync(daily).filter((f) => f.startsWith('vpn-access-backup-'))).toHaveLength(1);

    await daySwitch.click();
    await expect(daySwitch).not.toBeChecked();
    await expect(card.getByTestId('auto-backup')).toHaveCount(0);
  } finally {
    rmSync(daily, { recursive: true, force: true });
  }
});
