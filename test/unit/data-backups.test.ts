// The desktop's "Back up…" and "Restore…" (main/backup.ts) on a real data folder of some size: what
// the window is told while each runs (the step, the database's size, the seconds so far), nothing
// while a dialog waits for the person or once it is done; one at a time (a second is a 409); a
// remote server refused with the commands to run where it runs. The Electron dialogs and the
// embedded server's restart are stand-ins here; test/e2e/desktop/backup.spec.ts runs the real path.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DataBackups, type BackupDialogs } from '../../main/backup.ts';
import type { Endpoints } from '../../main/endpoint.ts';
import { SettingsFile } from '../../main/settings.ts';
import { openDatabase } from '../../server/store/db.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

/** Calls `read` on every turn of the event loop until `stop()`, keeping each distinct answer. */
function watch(read: () => string | null): { seen: Array<string | null>; stop(): void } {
  const seen: Array<string | null> = [];
  const timer = setInterval(() => {
    const v = read();
    if (seen.at(-1) !== v) seen.push(v);
  }, 1);
  return { seen, stop: () => clearInterval(timer) };
}

test('a backup and a restore say their step and size while they run, nothing while a dialog waits; one at a time; a remote server refused', async () => {
  const root = tempDir('vad-data-backups-');
  try {
    const serverDir = join(root, 'server');
    const db = openDatabase(serverDir);
    db.exec('CREATE TABLE ballast (b BLOB)');
    const insert = db.prepare('INSERT INTO ballast VALUES (randomblob(65536))');
    for (let i = 0; i < 160; i++) insert.run(); // about 10 MiB: the copy, check and hash take some turns of the loop
    db.close();
    const into = join(root, 'backups');
    mkdirSync(into);

    let mode = 'embedded';
    let backups: DataBackups;
    const duringDialogs: Array<string | null> = [];
    const folders: string[] = [];
    const dialogs: BackupDialogs = {
      chooseFolder: async () => {
        duringDialogs.push(backups.progress());
        return folders.shift() ?? null;
      },
      confirm: async () => {
        duringDialogs.push(backups.progress());
        return true;
      },
    };
    const endpoints = {
      info: () => ({ mode }),
      serverDir,
      replaceData: async <T>(work: (dir: string) => Promise<T>) => ({ value: await work(serverDir), tokenRenewed: false }),
    } as unknown as Endpoints;
    backups = new DataBackups({ endpoints, settings: new SettingsFile(root), dialogs });

    folders.push(into);
    const during = watch(() => backups.progress());
    const made = await backups.backup();
    during.stop();
    assert.ok(made.ok && made.value, JSON.stringify(made));
    const steps = during.seen.filter((s): s is string => s !== null);
    assert.ok(steps.length > 0, 'the window was told something while the backup ran');
    for (const s of steps) assert.match(s, /^(Copying|Checking the copy of|Hashing the copy of) the database \(\d+\.\d MiB\): \d+ s$/);
    assert.match(steps[0], /^Copying the database \((9|1\d)\.\d MiB\)/);
    assert.equal(backups.progress(), null, 'nothing once it is done');

    // Two at once: the second is refused while the first waits for its folder.
    folders.push(into);
    const [first, second] = await Promise.all([backups.backup(), backups.backup()]);
    assert.ok(first.ok);
    assert.ok(!second.ok && second.error.status === 409 && second.error.code === 'conflict');

    folders.push(made.value.folder);
    const restoring = watch(() => backups.progress());
    const restored = await backups.restore();
    restoring.stop();
    assert.ok(restored.ok && restored.value, JSON.stringify(restored));
    const restoreSteps = restoring.seen.filter((s): s is string => s !== null);
    assert.ok(restoreSteps.some((s) => s.startsWith('Checking the backup of the database (')), restoreSteps.join(' | '));
    assert.ok(restoreSteps.some((s) => s.startsWith('Restoring the database (')), restoreSteps.join(' | '));
    assert.deepEqual(
      duringDialogs.filter((p) => p !== null),
      [],
      'nothing runs while the person chooses a folder or answers the question',
    );

    mode = 'remote';
    const refused = await backups.backup();
    assert.ok(!refused.ok && refused.error.status === 409 && refused.error.code === 'not_supported');
    assert.match(refused.error.message, /vpn-access backup/);
  } finally {
    removeDir(root);
  }
});
