// The SQLite runner when SQLite ends a transaction by itself, as it does on a full disk or an I/O
// error at COMMIT: the operation's own error comes out (not "cannot rollback - no transaction is
// active", which hid a full disk as an unexplained 500), and the next operation runs. And the
// refusals no request can fix (SQLITE_FULL here, from a size cap) come out as DatabaseUnwritable.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { run, scalar, tx } from '../../server/store/sql/op.ts';
import { SqliteRunner } from '../../server/store/sql/sqlite-runner.ts';
import { DatabaseUnwritable } from '../../server/store/sql/unwritable.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

function openFile(t: { after(fn: () => void): void }): DatabaseSync {
  const dir = tempDir();
  const db = new DatabaseSync(join(dir, 'runner.db'));
  db.exec('PRAGMA journal_mode = WAL');
  t.after(() => {
    db.close();
    removeDir(dir);
  });
  return db;
}

test('a transaction SQLite rolled back itself: the statement\'s error comes out, nothing of it stays, the runner goes on', (t) => {
  const db = openFile(t);
  db.exec(`CREATE TABLE rows (v INTEGER);
    CREATE TRIGGER no_sevens BEFORE INSERT ON rows WHEN NEW.v = 7 BEGIN SELECT RAISE(ROLLBACK, 'seven refused'); END;`);
  const runner = new SqliteRunner(db);
  const insertTwo = tx(function* (a: number, b: number) {
    yield* run('INSERT INTO rows (v) VALUES (?)', a);
    yield* run('INSERT INTO rows (v) VALUES (?)', b);
  });
  assert.throws(() => runner.run(insertTwo(1, 7)), /seven refused/);
  assert.equal(db.isTransaction, false);
  assert.equal(runner.run(scalar<number>('SELECT count(*) FROM rows')), 0, 'the first insert went with the transaction');
  runner.run(insertTwo(1, 2));
  assert.equal(runner.run(scalar<number>('SELECT count(*) FROM rows')), 2);
});

test('a full database (its size cap): DatabaseUnwritable disk_full, the transaction rolled back whole', (t) => {
  const db = openFile(t);
  db.exec('CREATE TABLE blobs (b BLOB)');
  const runner = new SqliteRunner(db);
  const { page_count } = db.prepare('PRAGMA page_count').get() as { page_count: number };
  db.exec(`PRAGMA max_page_count = ${page_count + 2}`);
  const fill = tx(function* (n: number) {
    for (let i = 0; i < n; i++) yield* run('INSERT INTO blobs (b) VALUES (zeroblob(4096))');
  });
  assert.throws(() => runner.run(fill(10)), (err: unknown) => {
    assert.ok(err instanceof DatabaseUnwritable, String(err));
    assert.deepEqual(err.toBody().error.details, { reason: 'disk_full', retry_after: 10 });
    assert.match(String((err.cause as Error).message), /full/);
    return true;
  });
  assert.equal(db.isTransaction, false);
  assert.equal(runner.run(scalar<number>('SELECT count(*) FROM blobs')), 0);
  db.exec('PRAGMA max_page_count = 1073741823');
  runner.run(fill(10));
  assert.equal(runner.run(scalar<number>('SELECT count(*) FROM blobs')), 10);
});
