// The desktop's daily backup (main/auto-backup.ts) on real files, with the clock in the test's hand:
// on at once, then once a day; the newest 7 kept and nothing else touched; a folder gone is a failure
// shown and tried again an hour later, never made again where it was; off and cancelled change nothing.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AUTO_KEEP, AutoBackup } from '../../main/auto-backup.ts';
import { DataBackups, type BackupDialogs } from '../../main/backup.ts';
import type { Endpoints } from '../../main/endpoint.ts';
import { SettingsFile } from '../../main/settings.ts';
import { openDatabase } from '../../server/store/db.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const HOUR = 3600_000;

test('the daily backup: at once, then a day later; the newest 7 kept; a folder gone is a failure tried again hourly', async () => {
  const root = tempDir('vad-auto-backup-');
  try {
    const serverDir = join(root, 'server');
    openDatabase(serverDir).close();
    const daily = join(root, 'daily');
    mkdirSync(daily);
    // Older backups of this folder (named so, with a manifest), one named so without, and a file of the person's.
    for (let d = 1; d <= 8; d++) {
      const name = `vpn-access-backup-2026-11-0${d}T03-00-00.000Z`;
      mkdirSync(join(daily, name));
      writeFileSync(join(daily, name, 'backup.json'), '{}');
    }
    mkdirSync(join(daily, 'vpn-access-backup-2026-10-01T03-00-00.000Z'));
    writeFileSync(join(daily, 'notes.txt'), 'mine');

    let now = Date.parse('2026-11-29T10:00:00Z');
    const answers: Array<string | null> = [null, daily];
    const dialogs: BackupDialogs = { chooseFolder: async () => answers.shift() ?? null, confirm: async () => false };
    const endpoints = { info: () => ({ mode: 'embedded' }), serverDir } as unknown as Endpoints;
    const settings = new SettingsFile(root);
    const backups = new DataBackups({ endpoints, settings, dialogs });
    const auto = new AutoBackup({ endpoints, settings, backups, dialogs, now: () => now });
    const ours = () => readdirSync(daily).filter((f) => f.startsWith('vpn-access-backup-2026-11-')).sort();

    assert.deepEqual(auto.state(), { enabled: false, folder: null, keep: AUTO_KEEP, last_at: null, last_error: null, next_at: null });
    // Cancelled in the folder dialog: still off.
    assert.deepEqual(await auto.set(true), { ok: true, value: null });
    assert.equal(auto.state().enabled, false);

    const on = await auto.set(true);
    assert.ok(on.ok && on.value);
    assert.equal(on.value.folder, daily);
    assert.ok(on.value.last_at, 'backed up at once');
    assert.equal(on.value.next_at, new Date(Date.parse(on.value.last_at!) + 24 * HOUR).toISOString());
    assert.equal(ours().length, AUTO_KEEP);
    assert.equal(ours().at(-1), 'vpn-access-backup-2026-11-29T10-00-00.000Z');
    assert.ok(!ours().includes('vpn-access-backup-2026-11-02T03-00-00.000Z'), 'the oldest beyond 7 removed');
    assert.ok(existsSync(join(daily, 'notes.txt')) && existsSync(join(daily, 'vpn-access-backup-2026-10-01T03-00-00.000Z')), 'nothing else touched');

    now += HOUR;
    await auto.runIfDue();
    assert.equal(ours().at(-1), 'vpn-access-backup-2026-11-29T10-00-00.000Z', 'not due an hour later');
    now += 24 * HOUR;
    await auto.runIfDue();
    assert.equal(ours().at(-1), 'vpn-access-backup-2026-11-30T11-00-00.000Z', 'due a day later');
    assert.equal(ours().length, AUTO_KEEP);

    // The drive is gone: a failure, kept and tried again an hour later; the folder is not made again.
    renameSync(daily, `${daily}-unplugged`);
    now += 25 * HOUR;
    await auto.runIfDue();
    let st = auto.state();
    assert.match(st.last_error ?? '', /daily is not there \(a drive not connected\?\)/);
    assert.equal(st.next_at, new Date(now + HOUR).toISOString());
    assert.equal(existsSync(daily), false);
    renameSync(`${daily}-unplugged`, daily);
    now += 10 * 60_000;
    await auto.runIfDue();
    assert.ok(auto.state().last_error, 'not before the hour');
    now += HOUR;
    await auto.runIfDue();
    st = auto.state();
    assert.equal(st.last_error, null);
    assert.equal(st.last_at, new Date(now).toISOString());

    // Off: nothing more, and the setting kept across a restart.
    assert.equal((await auto.set(false)).ok, true);
    now += 48 * HOUR;
    const before = ours();
    await auto.runIfDue();
    assert.deepEqual(ours(), before);
    assert.equal(new SettingsFile(root).get().autoBackup?.enabled, false);
  } finally {
    removeDir(root);
  }
});
