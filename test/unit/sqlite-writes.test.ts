// The SQLite backend's write path: creations asked for together share one commit
// (store/group-commit.ts), and WAL checkpoints run in a worker thread (backend/checkpointer.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { groupedCreations } from '../../server/store/group-commit.ts';
import { startCheckpointer } from '../../server/backend/checkpointer.ts';
import { DB_FILE, openDatabase } from '../../server/store/db.ts';
import { Store, type NewSession } from '../../server/store/store.ts';
import { silentLogger } from '../../server/log.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

function open(): { store: Store; dir: string; customer: string } {
  const dir = tempDir('vad-writes-');
  const store = new Store(openDatabase(dir));
  const customer = store.createToken('acme', 'owner').info.customer_id;
  return { store, dir, customer };
}

const session = (customer: string, client = 'c1'): NewSession => ({
  id: randomUUID(),
  customer_id: customer,
  client_id: client,
  zone: 'de-fra',
  reusable: true,
  created_at: new Date().toISOString(),
});

const audit = (s: NewSession) => ({
  customer_id: s.customer_id, created_at: s.created_at, actor_token_id: null, actor_role: 'cli' as const, action: 'session.create',
  target_type: 'session', target_id: s.id, session_id: s.id, client_id: s.client_id, before: null, after: { zone: s.zone },
});

test('creations asked for in one turn are written in one transaction, each with its audit record', async (t) => {
  const { store, dir, customer } = open();
  try {
    const create = groupedCreations(store);
    const asked = Array.from({ length: 20 }, (_, i) => session(customer, `c${i}`));
    const exec = t.mock.method(store.db, 'exec');
    const rows = await Promise.all(asked.map((s) => create(s, null, audit(s))));
    const commits = exec.mock.calls.filter((c) => /^COMMIT/i.test(String(c.arguments[0]))).length;
    t.mock.restoreAll();
    assert.equal(commits, 1);
    assert.deepEqual(rows.map((r) => r.id), asked.map((s) => s.id));
    for (const s of asked) {
      assert.equal(store.getSession(s.id)?.client_id, s.client_id);
      assert.equal(store.auditEntries(customer, { session_id: s.id }, 5).rows.length, 1);
    }
    assert.equal(store.db.isTransaction, false);
  } finally {
    store.db.close();
    removeDir(dir);
  }
});

test('a creation that fails inside a group fails alone; the others are written', async () => {
  const { store, dir, customer } = open();
  try {
    const create = groupedCreations(store);
    const good = [session(customer, 'a'), session(customer, 'b')];
    // No such customer: the foreign key refuses this row, and with it the group's transaction.
    const bad = session('no-such-customer', 'x');
    const settled = await Promise.allSettled([create(good[0], null, audit(good[0])), create(bad, null, null), create(good[1], null, audit(good[1]))]);
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.match(String((settled[1] as PromiseRejectedResult).reason), /FOREIGN KEY/i);
    for (const s of good) assert.ok(store.getSession(s.id));
    assert.equal(store.getSession(bad.id), undefined);
    assert.equal(store.auditEntries(customer, {}, 10).rows.length, 2);
  } finally {
    store.db.close();
    removeDir(dir);
  }
});

test('the checkpoint worker copies the WAL into the database file, and stops when asked', async () => {
  const { store, dir, customer } = open();
  try {
    const stop = startCheckpointer(store.db, join(dir, DB_FILE), silentLogger, 20);
    // The API connection no longer checkpoints by itself under 10,000 pages.
    assert.equal((store.db.prepare('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint, 10_000);
    const before = statSync(join(dir, DB_FILE)).size;
    store.transaction(() => {
      for (let i = 0; i < 2000; i++) store.insertSession(session(customer, `client-${i}`));
    });
    let after = before;
    for (let i = 0; i < 100 && after <= before; i++) {
      await sleep(20);
      after = statSync(join(dir, DB_FILE)).size;
    }
    assert.ok(after > before, `the database file grew from ${before} bytes once checkpointed (${after})`);
    await stop();
    assert.equal(store.listSessions(customer, {}, 5).rows.length, 5);
  } finally {
    store.db.close();
    removeDir(dir);
  }
});

test('the checkpoint worker does not keep a process alive: one that started it and has nothing else to do exits', () => {
  const dir = tempDir('vad-writes-exit-');
  try {
    const script = join(dir, 'start.ts');
    writeFileSync(script, [
      `import { DatabaseSync } from 'node:sqlite';`,
      `import { startCheckpointer } from ${JSON.stringify(new URL('../../server/backend/checkpointer.ts', import.meta.url).pathname)};`,
      `const db = new DatabaseSync(${JSON.stringify(join(dir, 'x.db'))});`,
      `db.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x)');`,
      `startCheckpointer(db, ${JSON.stringify(join(dir, 'x.db'))}, { warn() {}, info() {}, error() {}, debug() {} } as never);`,
      `console.log('started');`,
    ].join('\n'));
    const r = spawnSync(process.execPath, [script], { timeout: 10_000, encoding: 'utf8' });
    assert.equal(r.stdout.trim(), 'started', r.stderr);
    assert.equal(r.signal, null, 'the process had to be killed: the worker kept it alive');
    assert.equal(r.status, 0, r.stderr);
  } finally {
    removeDir(dir);
  }
});
