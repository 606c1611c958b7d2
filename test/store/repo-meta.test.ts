// What the store says about the database itself, on both databases: the schema version the
// migrations reached, and the database's clock (ISO, milliseconds; the doctor compares the
// machine's clock with PostgreSQL's), here on this machine so within a second of it.
import assert from 'node:assert/strict';
import { MIGRATIONS, migrationOps as ops } from '../../server/store/migrations/index.ts';
import { eachDialect } from '../helpers/dialects.ts';

eachDialect('meta: the schema version and the database clock', async (db) => {
  assert.equal(await db.run(ops.schemaVersion()), MIGRATIONS.length);
  const before = Date.now();
  const clock = await db.run(ops.databaseClock());
  const after = Date.now();
  assert.match(clock, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const at = Date.parse(clock);
  assert.ok(at >= before - 1000 && at <= after + 1000, `${clock} between ${new Date(before).toISOString()} and ${new Date(after).toISOString()}`);
});
