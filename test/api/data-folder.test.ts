// The data folder holds session ids (VLESS secrets) and token hashes: the folder is 0700 and
// the database with its WAL and SHM files 0600, also when the folder already existed with
// looser modes (an older version, a restored backup, a permissive umask).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openDatabase } from '../../server/store/db.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

const mode = (p: string) => statSync(p).mode & 0o777;

test('data folder 0700 and database, WAL and SHM files 0600, also over an existing loose folder', () => {
  const parent = tempDir('vad-modes-');
  const oldUmask = process.umask(0o022);
  try {
    // A fresh folder.
    const fresh = join(parent, 'fresh');
    const db1 = openDatabase(fresh);
    db1.exec("INSERT INTO customers (id, name, created_at) VALUES ('c', 'c', 'now')");
    assert.equal(mode(fresh), 0o700);
    for (const f of ['vpn-access.db', 'vpn-access.db-wal', 'vpn-access.db-shm']) {
      assert.ok(existsSync(join(fresh, f)), f);
      assert.equal(mode(join(fresh, f)), 0o600, f);
    }
    db1.close();

    // A folder that already existed, with world-readable modes everywhere.
    const loose = join(parent, 'loose');
    mkdirSync(loose, { mode: 0o755 });
    chmodSync(loose, 0o755);
    const first = openDatabase(loose);
    first.exec("INSERT INTO customers (id, name, created_at) VALUES ('c', 'c', 'now')");
    for (const f of ['vpn-access.db', 'vpn-access.db-wal', 'vpn-access.db-shm']) chmodSync(join(loose, f), 0o644);
    chmodSync(loose, 0o755);
    const second = openDatabase(loose);
    second.exec("INSERT INTO customers (id, name, created_at) VALUES ('d', 'd', 'now')");
    assert.equal(mode(loose), 0o700);
    for (const f of ['vpn-access.db', 'vpn-access.db-wal', 'vpn-access.db-shm']) assert.equal(mode(join(loose, f)), 0o600, f);
    second.close();
    first.close();

    // A database file copied in with 0644 before the first start.
    const copied = join(parent, 'copied');
    mkdirSync(copied, { mode: 0o777 });
    writeFileSync(join(copied, 'vpn-access.db'), '', { mode: 0o644 });
    chmodSync(join(copied, 'vpn-access.db'), 0o644);
    const db3 = openDatabase(copied);
    db3.exec("INSERT INTO customers (id, name, created_at) VALUES ('c', 'c', 'now')");
    assert.equal(mode(copied), 0o700);
    for (const f of ['vpn-access.db', 'vpn-access.db-wal', 'vpn-access.db-shm']) assert.equal(mode(join(copied, f)), 0o600, f);
    db3.close();
  } finally {
    process.umask(oldUmask);
    removeDir(parent);
  }
});
