// The desktop's "Back up…" and "Restore…" (main/backup.ts) on a real data folder of some size: what
// the window is told while each runs (each step, the database's size, the seconds so far), nothing
// while a dialog waits for the person or once it is done; one at a time (a second is a 409); a
// remote server refused with the commands to run where it runs. The Electron dialogs and the
// embedded server's restart are stand-ins here; test/e2e/desktop/backup.spec.ts runs the real path.
import assert from 'node:assert/strict';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { BackupProgress } from '../../common/api-types.ts';
import { DataBackups, type BackupDialogs } from '../../main/backup.ts';
import type { Endpoints } from '../../main/endpoint.ts';
import { SettingsFile } from '../../main/settings.ts';
import { openDatabase } from '../../server/store/db.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

/** Asks `backups` what it is doing every millisecond until `stop()`, keeping each step told ("copying 10485760"). */
function watch(backups: DataBackups): { seen: string[]; stop(): void } {
  const seen: string[] = [];
  const timer = setInterval(() => {
    const p = backups.progress();
    if (!p) return;
    assert.ok(Number.isInteger(p.seconds) && p.seconds >= 0 && p.seconds < 60, JSON.stringify(p));
    const v = `${p.doing} ${p.bytes}`;
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
    const duringDialogs: Array<BackupProgress | null> = [];
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
      // The server's stop and start around the restore: the start takes a moment.
      replaceData: async <T>(work: (dir: string) => Promise<T>) => {
        const value = await work(serverDir);
        await new Promise((r) => setTimeout(r, 50));
        return { value, tokenRenewed: false };
      },
    } as unknown as Endpoints;
    backups = new DataBackups({ endpoints, settings: new SettingsFile(root), dialogs });

    folders.push(into);
    const size = statSync(join(serverDir, 'vpn-access.db')).size;
    const during = watch(backups);
    const made = await backups.backup();
    during.stop();
    assert.ok(made.ok && made.value, JSON.stringify(made));
    assert.ok(during.seen.length > 0, 'the window was told something while the backup ran');
    assert.equal(during.seen[0], `copying ${size}`);
    for (const s of during.seen) assert.ok([`copying ${size}`, `checking the copy of ${size}`, `hashing the copy of ${size}`].includes(s), s);
    assert.equal(backups.progress(), null, 'nothing once it is done');

    // Two at once: the second is refused while the first waits for its folder.
    folders.push(into);
    const [first, second] = await Promise.all([backups.backup(), backups.backup()]);
    assert.ok(first.ok);
    assert.ok(!second.ok && second.error.status === 409 && second.error.code === 'conflict');

    folders.push(made.value.folder);
    const restoring = watch(backups);
    const restored = await backups.restore();
    restoring.stop();
    assert.ok(restored.ok && restored.value, JSON.stringify(restored));
    const copied = statSync(join(made.value.folder, 'vpn-access.db')).size;
    assert.ok(restoring.seen.includes(`checking the backup of ${copied}`), restoring.seen.join(' | '));
    assert.ok(restoring.seen.includes(`restoring ${copied}`), restoring.seen.join(' | '));
    assert.equal(restoring.seen.at(-1), `starting the server on ${copied}`);
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
