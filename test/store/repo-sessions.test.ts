// The sessions (with createSession: row, placement, audit in one transaction), limits and events repositories on both databases, with the same expectations.
import assert from 'node:assert/strict';
import { auditOps } from '../../server/store/repos/audit.ts';
import { eventOps } from '../../server/store/repos/events.ts';
import { limitOps } from '../../server/store/repos/limits.ts';
import { nodeOps } from '../../server/store/repos/nodes.ts';
import { placementOps, type Creation } from '../../server/store/repos/placements.ts';
import { sessionOps } from '../../server/store/repos/sessions.ts';
import { tokenOps } from '../../server/store/repos/tokens.ts';
import { eachDialect, type DialectDb } from '../helpers/dialects.ts';

const iso = (ms: number) => new Date(ms).toISOString();

async function customer(db: DialectDb, name = 'acme'): Promise<string> {
  return (await db.run(tokenOps.ensureCustomer(name))).id;
}

function session(customerId: string, n: number, extra: Partial<{ client_id: string; zone: string; reusable: boolean; expires_at: string | null }> = {}) {
  return { id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, customer_id: customerId, client_id: 'alice', zone: 'de-fra', reusable: true, created_at: iso(1_700_000_000_000 + n), ...extra };
}

eachDialect('sessions: insert, read, page, pause, runtime, sums, expiry', async (db) => {
  const c = await customer(db);
  const other = await customer(db, 'other');
  const first = await db.run(sessionOps.insertSession(session(c, 1)));
  assert.deepEqual(first, { ...session(c, 1), reusable: true, paused: false, status: 'created', uploaded_bytes: 0, downloaded_bytes: 0, duration: 0, connections: 0, expires_at: null });
  for (let n = 2; n <= 5; n++) await db.run(sessionOps.insertSession(session(c, n, { client_id: n % 2 ? 'alice' : 'bob', reusable: n !== 3 })));
  await db.run(sessionOps.insertSession(session(other, 9)));
  assert.equal(await db.run(sessionOps.getSessionOf(other, first.id)), undefined, "another customer's id is not found");
  assert.equal((await db.run(sessionOps.getSessionOf(c, first.id)))?.id, first.id);
  assert.equal((await db.run(sessionOps.getSession(session(c, 3).id)))?.reusable, false);

  // Newest first, two to a page, then the rest; filters combine.
  const p1 = await db.run(sessionOps.listSessions(c, {}, 2));
  assert.deepEqual(p1.rows.map((r) => r.id.slice(-1)), ['5', '4']);
  assert.equal(typeof p1.nextSeq, 'number');
  const p2 = await db.run(sessionOps.listSessions(c, {}, 10, p1.nextSeq!));
  assert.deepEqual([p2.rows.map((r) => r.id.slice(-1)), p2.nextSeq], [['3', '2', '1'], null]);
  assert.deepEqual((await db.run(sessionOps.listSessions(c, { client_id: 'bob' }, 10))).rows.map((r) => r.id.slice(-1)), ['4', '2']);

  await db.run(sessionOps.setPaused(first.id, true));
  assert.equal((await db.run(sessionOps.getSession(first.id)))?.paused, true);
  await db.run(sessionOps.saveRuntime(first.id, { status: 'active', uploaded_bytes: 100, downloaded_bytes: 2_000_000_000_000 }));
  await db.run(sessionOps.saveRuntime(session(c, 2).id, { uploaded_bytes: 5, downloaded_bytes: 7, duration: 3, connections: 1 }));
  await db.run(sessionOps.saveRuntime(first.id, {}));
  const row = (await db.run(sessionOps.getSession(first.id)))!;
  assert.deepEqual([row.status, row.uploaded_bytes, row.downloaded_bytes], ['active', 100, 2_000_000_000_000]);
  assert.deepEqual(await db.run(sessionOps.sumCounters(c)), { uploaded_bytes: 105, downloaded_bytes: 2_000_000_000_007 });
  assert.deepEqual(await db.run(sessionOps.sumCounters(c, 'bob')), { uploaded_bytes: 5, downloaded_bytes: 7 });
  assert.deepEqual(await db.run(sessionOps.sumCounters(c, 'nobody')), { uploaded_bytes: 0, downloaded_bytes: 0 });

  // Expiry ends created and idle sessions past their time, never an active one.
  const past = iso(Date.now() - 1000);
  await db.run(sessionOps.insertSession(session(c, 6, { expires_at: past })));
  await db.run(sessionOps.insertSession(session(c, 7, { expires_at: iso(Date.now() + 60_000) })));
  await db.run(sessionOps.insertSession(session(c, 8, { expires_at: past })));
  await db.run(sessionOps.saveRuntime(session(c, 8).id, { status: 'active' }));
  assert.equal(await db.run(sessionOps.expireIdleSessions(iso(Date.now()))), 1);
  assert.deepEqual(
    await Promise.all([6, 7, 8].map(async (n) => (await db.run(sessionOps.getSession(session(c, n).id)))?.status)),
    ['ended', 'created', 'active'],
  );
});

eachDialect('limits: patch merges, null removes, delete, periodic records', async (db) => {
  const c = await customer(db);
  assert.equal(await db.run(limitOps.getLimits(c, 'global')), undefined);
  const a = await db.run(limitOps.patchLimits(c, 'global', { downloaded_bytes: 100, max_sessions: 2 }));
  const b = await db.run(limitOps.patchLimits(c, 'global', { max_sessions: null, upload_speed: 5 }));
  assert.equal(a.id, b.id);
  assert.equal(a.created_at, b.created_at);
  assert.deepEqual(await db.run(limitOps.getLimits(c, 'global')), { downloaded_bytes: 100, upload_speed: 5 });
  assert.deepEqual({ ...(await db.run(limitOps.getLimitsRecord(c, 'global'))) }, b);
  // Concurrent patches of one record all land.
  const fields = ['downloaded_bytes', 'uploaded_bytes', 'download_speed', 'upload_speed', 'max_sessions', 'max_reconnections'];
  await Promise.all(fields.map((f, i) => db.run(limitOps.patchLimits(c, 'client', { [f]: i + 1 }))));
  assert.deepEqual(await db.run(limitOps.getLimits(c, 'client')), Object.fromEntries(fields.map((f, i) => [f, i + 1])));
  await db.run(limitOps.patchLimits(c, 'session', { downloaded_bytes: 10, reset_period: 'month' }));
  assert.deepEqual(await db.run(limitOps.periodicLimits()), [{ customer_id: c, scope: 'session', values: { downloaded_bytes: 10, reset_period: 'month' } }]);
  assert.equal(await db.run(limitOps.deleteLimits(c, 'global')), true);
  assert.equal(await db.run(limitOps.deleteLimits(c, 'global')), false);
  assert.equal(await db.run(limitOps.getLimitsRecord(c, 'global')), undefined);
});

eachDialect('events: ids in order, batches, filters, replay points', async (db) => {
  const c = await customer(db);
  const ev = (session_id: string, event_type: 'session_start' | 'session_end' | 'session_stats', n: number) => ({
    customer_id: c,
    session_id,
    event_type,
    created_at: iso(1_700_000_000_000 + n),
    duration: n,
    downloaded_bytes: n * 10,
    uploaded_bytes: n,
  });
  assert.equal(await db.run(eventOps.lastEventId()), 0);
  const one = await db.run(eventOps.insertEvent(ev('s1', 'session_start', 1)));
  const batch = await db.run(eventOps.insertEvents([ev('s2', 'session_start', 2), ev('s1', 'session_stats', 3), ev('s1', 'session_end', 4)]));
  assert.deepEqual(batch.map((e) => e.id - one.id), [1, 2, 3]);
  assert.deepEqual(one, { id: one.id, session_id: 's1', event_type: 'session_start', created_at: iso(1_700_000_000_001), duration: 1, downloaded_bytes: 10, uploaded_bytes: 1 });
  assert.equal(await db.run(eventOps.lastEventId()), batch[2].id);
  assert.deepEqual((await db.run(eventOps.eventsAfter(c, 0, {}, 10))).map((e) => e.id), [one.id, ...batch.map((e) => e.id)]);
  assert.deepEqual((await db.run(eventOps.eventsAfter(c, one.id, { sessionIds: ['s1'] }, 10))).map((e) => e.event_type), ['session_stats', 'session_end']);
  assert.deepEqual((await db.run(eventOps.eventsAfter(c, 0, { types: ['session_start'] }, 1))).map((e) => e.session_id), ['s1']);
  assert.deepEqual(await db.run(eventOps.eventsAfter('nobody', 0, {}, 10)), []);
  assert.equal(await db.run(eventOps.idBeforeNewest(c, {}, 2)), batch[0].id);
  assert.equal(await db.run(eventOps.idBeforeNewest(c, { sessionIds: ['s2'] }, 5)), 0);
});

eachDialect('createSession: the row, its placement and its audit record in one transaction', async (db) => {
  const c = await customer(db);
  const node = (await db.run(nodeOps.addNode({ name: 'fra-1', zone: 'de-fra', public_host: 'fra1.example.net' }))).node;
  const entry = (id: string, action = 'session.create') => ({
    customer_id: c, created_at: iso(1_700_000_000_000), actor_token_id: 't1', actor_role: 'owner' as const, action,
    target_type: 'session', target_id: id, session_id: id, client_id: 'alice', before: null, after: { zone: 'de-fra' },
  });
  const placed = await db.run(placementOps.createSession(session(c, 1), node.id, entry(session(c, 1).id)));
  assert.equal(placed.status, 'created');
  assert.equal(await db.run(placementOps.placementOf(placed.id)), node.id);
  const audited = await db.run(auditOps.auditEntries(c, {}, 10));
  assert.deepEqual(audited.rows.map((r) => [r.action, r.target.id, r.after]), [['session.create', placed.id, { zone: 'de-fra' }]]);

  // Local (no node), not audited: the row alone.
  const local = await db.run(placementOps.createSession(session(c, 2), null, null));
  assert.equal(await db.run(placementOps.placementOf(local.id)), undefined);
  assert.equal((await db.run(auditOps.auditEntries(c, {}, 10))).rows.length, 1);

  // A placement that cannot be written (no such node) leaves neither the row nor its record.
  await assert.rejects(db.run(placementOps.createSession(session(c, 3), 'no-such-node', entry(session(c, 3).id))));
  assert.equal(await db.run(sessionOps.getSession(session(c, 3).id)), undefined);
  assert.equal((await db.run(auditOps.auditEntries(c, {}, 10))).rows.length, 1);

  // Local and audited; placed and not audited (PostgreSQL writes each mix as one statement).
  const localAudited = await db.run(placementOps.createSession(session(c, 4), null, entry(session(c, 4).id)));
  assert.equal(await db.run(placementOps.placementOf(localAudited.id)), undefined);
  const placedQuiet = await db.run(placementOps.createSession(session(c, 5), node.id, null));
  assert.equal(await db.run(placementOps.placementOf(placedQuiet.id)), node.id);
  assert.deepEqual((await db.run(auditOps.auditEntries(c, {}, 10))).rows.map((r) => r.target.id), [localAudited.id, placed.id]);
  for (const made of [placed, local, localAudited, placedQuiet]) assert.deepEqual(made, await db.run(sessionOps.getSession(made.id)), 'the row returned is the row stored');
});

eachDialect('createSessions: a group of creations (any mix of node and audit) in one commit, rows in the order asked, or none', async (db) => {
  const c = await customer(db);
  const node = (await db.run(nodeOps.addNode({ name: 'fra-1', zone: 'de-fra', public_host: 'fra1.example.net' }))).node;
  const entry = (id: string) => ({
    customer_id: c, created_at: iso(1_700_000_000_000), actor_token_id: null, actor_role: 'cli' as const, action: 'session.create',
    target_type: 'session', target_id: id, session_id: id, client_id: 'bob', before: null, after: { zone: 'us-nyc', quote: 'a "b", {c}' },
  });
  const asked = [5, 3, 9, 1].map((n, i) => session(c, n, { client_id: i % 2 ? 'bob' : 'alice', reusable: i !== 1, expires_at: i === 2 ? iso(1_800_000_000_000) : null }));
  const group: Creation[] = [[asked[0], node.id, entry(asked[0].id)], [asked[1], null, null], [asked[2], node.id, null], [asked[3], null, entry(asked[3].id)]];
  const made = await db.run(placementOps.createSessions(group));
  assert.deepEqual(made.map((r) => r.id), asked.map((s) => s.id), 'in the order asked');
  for (const [i, row] of made.entries()) {
    assert.deepEqual(row, await db.run(sessionOps.getSession(row.id)), 'the row returned is the row stored');
    assert.deepEqual([row.reusable, row.expires_at, row.client_id], [asked[i].reusable, asked[i].expires_at ?? null, asked[i].client_id]);
    assert.equal(await db.run(placementOps.placementOf(row.id)), group[i][1] ?? undefined);
  }
  const audited = (await db.run(auditOps.auditEntries(c, {}, 10))).rows;
  assert.deepEqual(audited.map((r) => r.target.id).sort(), [asked[0].id, asked[3].id].sort());
  assert.deepEqual(audited[0].after, { zone: 'us-nyc', quote: 'a "b", {c}' }, 'values with quotes and braces pass through the lists');
  // Each creation's record is found by its session (through the seq the insert looked up).
  for (const i of [0, 3]) assert.deepEqual((await db.run(auditOps.auditEntries(c, { session_id: asked[i].id }, 10))).rows.map((r) => r.target.id), [asked[i].id]);
  assert.deepEqual((await db.run(auditOps.auditEntries(c, { session_id: asked[1].id }, 10))).rows, []);
  // Newest first: the group keeps its order in the sessions' own order too.
  assert.deepEqual((await db.run(sessionOps.listSessions(c, {}, 10))).rows.map((r) => r.id), [...asked].reverse().map((s) => s.id));

  // One creation that cannot be written (no such node) leaves none of its group.
  const bad = [session(c, 20), session(c, 21)];
  await assert.rejects(db.run(placementOps.createSessions([[bad[0], null, entry(bad[0].id)], [bad[1], 'no-such-node', null]])));
  for (const s of bad) assert.equal(await db.run(sessionOps.getSession(s.id)), undefined);
  assert.equal((await db.run(auditOps.auditEntries(c, {}, 10))).rows.length, 2);
  assert.deepEqual(await db.run(placementOps.createSessions([])), []);
});
