// Support reads across instances, stored on both databases (a single SQLite process never uses
// them, but the operations and the schema are the same): instances marked seen and listed by
// recency, an answer per request and instance stored once, read and deleted together, and
// answers nobody read and instances long silent swept.
import assert from 'node:assert/strict';
import { supportAnswerOps as ops } from '../../server/store/repos/support-answers.ts';
import { eachDialect } from '../helpers/dialects.ts';

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

eachDialect('instances seen lately are listed; a later mark moves one forward', async (db) => {
  await db.run(ops.seeInstance('cp-a', ago(120_000)));
  await db.run(ops.seeInstance('cp-b', ago(5_000)));
  assert.deepEqual(await db.run(ops.instancesSeenSince(ago(60_000))), ['cp-b']);
  await db.run(ops.seeInstance('cp-a', ago(0)));
  assert.deepEqual(await db.run(ops.instancesSeenSince(ago(60_000))), ['cp-a', 'cp-b']);
  assert.deepEqual((await db.sql<{ instance_id: string }>('SELECT instance_id FROM control_instances ORDER BY instance_id')).map((r) => r.instance_id), ['cp-a', 'cp-b']);
});

eachDialect('answers of a request are read once and deleted; another request keeps its own', async (db) => {
  await db.run(ops.askInstances('{"r":"req-1"}'));
  await db.run(ops.putSupportAnswer('req-1', 'cp-b', '{"parts":[]}', ago(0)));
  await db.run(ops.putSupportAnswer('req-1', 'cp-c', '{"parts":[1]}', ago(0)));
  // A repeated answer of the same instance is not stored twice.
  await db.run(ops.putSupportAnswer('req-1', 'cp-b', '{"again":true}', ago(0)));
  await db.run(ops.putSupportAnswer('req-2', 'cp-b', 'x'.repeat(20_000), ago(0)));
  assert.deepEqual((await db.run(ops.takeSupportAnswers('req-1'))).map((r) => [r.instance_id, r.body]), [
    ['cp-b', '{"parts":[]}'],
    ['cp-c', '{"parts":[1]}'],
  ]);
  assert.deepEqual(await db.run(ops.takeSupportAnswers('req-1')), []);
  const [big] = await db.run(ops.takeSupportAnswers('req-2'));
  assert.equal(big.body.length, 20_000, 'larger than a NOTIFY payload');
});

eachDialect('answers older than a minute and instances long silent are swept', async (db) => {
  await db.run(ops.putSupportAnswer('old', 'cp-b', '{}', ago(90_000)));
  await db.run(ops.putSupportAnswer('new', 'cp-b', '{}', ago(1_000)));
  await db.run(ops.seeInstance('gone', ago(3_600_000)));
  await db.run(ops.seeInstance('here', ago(1_000)));
  assert.equal(await db.run(ops.sweepSupport(ago(60_000), ago(600_000))), 2);
  assert.deepEqual((await db.sql<{ request_id: string }>('SELECT request_id FROM support_answers')).map((r) => r.request_id), ['new']);
  assert.deepEqual((await db.sql<{ instance_id: string }>('SELECT instance_id FROM control_instances')).map((r) => r.instance_id), ['here']);
});
