// The audit-trail and event-retention repositories on both databases: entries recorded with
// their JSON values, read newest first with every filter and paged by id, and old entries and
// events deleted in bounded batches, oldest first, recent ones kept.
import assert from 'node:assert/strict';
import { auditOps as ops, type AuditInsert } from '../../server/store/repos/audit.ts';
import { retentionOps } from '../../server/store/repos/retention.ts';
import { sessionOps } from '../../server/store/repos/sessions.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';

const entry = (n: number, over: Partial<AuditInsert> = {}): AuditInsert => ({
  customer_id: 'acme',
  created_at: `2026-11-0${n}T00:00:00.000Z`,
  actor_token_id: 'tok-owner',
  actor_role: 'owner',
  action: 'limits.update',
  target_type: 'limits',
  target_id: 'global',
  session_id: null,
  client_id: null,
  before: null,
  after: { max_sessions: n },
  ...over,
});

eachDialect('audit: record, read newest first with filters, page on, prune in batches', async (db) => {
  // The sessions the entries name (a session's entries are found through its seq).
  await db.sql('INSERT INTO customers (id, name, created_at) VALUES (?, ?, ?)', 'acme', 'acme', '2026-11-01T00:00:00.000Z');
  for (const id of ['s1', 's2']) await db.run(sessionOps.insertSession({ id, customer_id: 'acme', client_id: 'alice', zone: 'de-fra', reusable: true, created_at: '2026-11-01T00:00:00.000Z' }));
  const ids: number[] = [];
  ids.push(await db.run(ops.recordAudit(entry(1, { before: undefined, after: { a: [1, 'two'], b: null } }))));
  ids.push(await db.run(ops.recordAudit(entry(2, { action: 'session.pause', target_type: 'session', target_id: 's1', session_id: 's1', client_id: 'alice' }))));
  ids.push(await db.run(ops.recordAudit(entry(3, { actor_token_id: null, actor_role: 'cli', action: 'session.delete', session_id: 's1', client_id: 'alice' }))));
  ids.push(await db.run(ops.recordAudit(entry(4, { action: 'session.pause', session_id: 's2', client_id: 'bob', actor_token_id: 'tok-agent', actor_role: 'agent' }))));
  ids.push(await db.run(ops.recordAudit(entry(5, { customer_id: 'globex' }))));
  assert.ok(ids.every((id, i) => typeof id === 'number' && (i === 0 || id > ids[i - 1]!)), `ids grow: ${ids}`);

  const page = await db.run(ops.auditEntries('acme', {}, 10));
  assert.deepEqual(page.rows.map((r) => r.id), [ids[3], ids[2], ids[1], ids[0]]);
  assert.equal(page.nextId, null);
  assert.deepEqual(page.rows[3], {
    id: ids[0],
    created_at: '2026-11-01T00:00:00.000Z',
    actor: { token_id: 'tok-owner', role: 'owner' },
    action: 'limits.update',
    target: { type: 'limits', id: 'global' },
    session_id: null,
    client_id: null,
    before: null,
    after: { a: [1, 'two'], b: null },
  });
  assert.deepEqual(page.rows[1]!.actor, { token_id: null, role: 'cli' });

  const of = async (f: Parameters<typeof ops.auditEntries>[1]) => (await db.run(ops.auditEntries('acme', f, 10))).rows.map((r) => r.id);
  assert.deepEqual(await of({ session_id: 's1' }), [ids[2], ids[1]]);
  assert.deepEqual(await of({ session_id: 'no-such-session' }), []);
  assert.deepEqual(await of({ client_id: 'bob' }), [ids[3]]);
  assert.deepEqual(await of({ action: 'session.pause' }), [ids[3], ids[1]]);
  assert.deepEqual(await of({ actions: ['session.delete', 'limits.update'] }), [ids[2], ids[0]]);
  assert.deepEqual(await of({ actions: [] }), [], 'an empty list of actions shows nothing');
  assert.deepEqual(await of({ actor_token_id: 'tok-agent' }), [ids[3]]);
  assert.deepEqual(await of({ from: '2026-11-02T00:00:00.000Z', to: '2026-11-04T00:00:00.000Z' }), [ids[2], ids[1]]);
  assert.deepEqual(await of({ session_id: 's1', action: 'session.pause' }), [ids[1]]);
  assert.deepEqual((await db.run(ops.auditEntries('globex', {}, 10))).rows.map((r) => r.after), [{ max_sessions: 5 }]);

  // paging: `nextId` is the last id shown, and the next page starts below it
  const first = await db.run(ops.auditEntries('acme', {}, 3));
  assert.deepEqual([first.rows.map((r) => r.id), first.nextId], [[ids[3], ids[2], ids[1]], ids[1]]);
  const second = await db.run(ops.auditEntries('acme', {}, 3, first.nextId!));
  assert.deepEqual([second.rows.map((r) => r.id), second.nextId], [[ids[0]], null]);
  const exact = await db.run(ops.auditEntries('acme', {}, 2, ids[2]));
  assert.deepEqual([exact.rows.map((r) => r.id), exact.nextId], [[ids[1], ids[0]], null], 'a full last page has no next');

  // prune: at most `limit` of the oldest entries older than the cutoff, of every customer
  assert.equal(await db.run(ops.pruneAuditBatch('2026-11-01T00:00:00.000Z', 10)), 0);
  assert.equal(await db.run(ops.pruneAuditBatch('2026-11-04T00:00:00.000Z', 2)), 2);
  assert.deepEqual(await of({}), [ids[3], ids[2]]);
  assert.equal(await db.run(ops.pruneAuditBatch('2026-11-04T00:00:00.000Z', 2)), 1);
  assert.equal(await db.run(ops.pruneAuditBatch('2026-11-04T00:00:00.000Z', 2)), 0);
  assert.deepEqual(await of({}), [ids[3]]);
  assert.equal(await db.run(ops.pruneAuditBatch('2026-12-01T00:00:00.000Z', 10)), 2);
});

async function addEvents(db: DialectDb, fromId: number, n: number, createdAt: string): Promise<void> {
  for (let id = fromId; id < fromId + n; id++) {
    await db.sql(
      'INSERT INTO events (id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes) VALUES (?, ?, ?, ?, ?, 0, 0, 0)',
      id, 'acme', `s${id % 3}`, 'session_stats', createdAt,
    );
  }
}

eachDialect('retention: old events deleted in bounded batches, oldest first; recent ones stay', async (db) => {
  const OLD = '2020-01-01T00:00:00.000Z';
  const RECENT = '2026-11-20T00:00:00.000Z';
  const CUTOFF = '2026-01-01T00:00:00.000Z';
  await addEvents(db, 1, 25, OLD);
  await addEvents(db, 26, 5, RECENT);
  const left = async () => (await db.sql<{ id: number }>('SELECT id FROM events ORDER BY id')).map((r) => Number(r.id));
  // what http/retention.ts does: batches until one comes back short
  const batches: number[] = [];
  for (let n = 10; n === 10; ) {
    batches.push((n = await db.run(retentionOps.pruneEventsBatch(CUTOFF, 10))));
    if (n === 10) assert.equal((await left())[0], batches.length * 10 + 1, 'the oldest went first');
  }
  assert.deepEqual(batches, [10, 10, 5]);
  assert.deepEqual(await left(), [26, 27, 28, 29, 30]);
  assert.equal(await db.run(retentionOps.pruneEventsBatch(CUTOFF, 10)), 0);

  // the one-statement prune deletes every older event at once
  await addEvents(db, 31, 12, OLD);
  assert.equal(await db.run(retentionOps.pruneEvents(CUTOFF)), 12);
  assert.equal(await db.run(retentionOps.pruneEvents(CUTOFF)), 0);
  assert.deepEqual(await left(), [26, 27, 28, 29, 30]);
});
