// renderer/src/store/session-view.ts: rows with live speeds, listing pages, the newest-sessions
// merge, speed history, filter and totals. Pure functions, so plain values in and out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '../../common/api-types.ts';
import {
  addListingPage,
  filterSessionIds,
  HISTORY,
  mergeNewest,
  pushHistory,
  sessionTotals,
  toView,
  watchHistoryOf,
  type SessionView,
} from '../../renderer/src/store/session-view.ts';

function session(id: string, over: Partial<Session> = {}): Session {
  return {
    id,
    client_id: `client-${id}`,
    zone: 'de-fra',
    status: 'active',
    paused: false,
    reusable: true,
    created_at: `2026-11-22T10:00:0${id.length % 10}.000Z`,
    duration: 0,
    uploaded_bytes: 0,
    downloaded_bytes: 0,
    ...over,
  } as Session;
}

const T0 = 1_000_000;

test('toView: speeds from the counters since the last sample; nothing moves for paused or inactive sessions', () => {
  const first = toView(session('a', { uploaded_bytes: 100, downloaded_bytes: 1000 }), undefined, T0);
  assert.equal(first.up_speed, 0);
  assert.equal(first.sampled_at, T0);
  const second = toView(session('a', { uploaded_bytes: 600, downloaded_bytes: 3000 }), first, T0 + 500);
  assert.equal(second.up_speed, 1000);
  assert.equal(second.down_speed, 4000);
  assert.equal(second.sampled_at, T0 + 500);
  // Unchanged counters within 2 s keep the speed and the old sample time.
  const same = toView(session('a', { uploaded_bytes: 600, downloaded_bytes: 3000 }), second, T0 + 1500);
  assert.equal(same.up_speed, 1000);
  assert.equal(same.sampled_at, T0 + 500);
  // After 2 s without a change the speed is zero.
  const stale = toView(session('a', { uploaded_bytes: 600, downloaded_bytes: 3000 }), second, T0 + 3000);
  assert.equal(stale.up_speed, 0);
  assert.equal(stale.sampled_at, T0 + 3000);
  // Counters that go back never make a negative speed.
  assert.equal(toView(session('a', { uploaded_bytes: 0, downloaded_bytes: 0 }), second, T0 + 1000).down_speed, 0);
  for (const over of [{ paused: true }, { status: 'idle' as const }, { status: 'ended' as const }]) {
    assert.equal(toView(session('a', { uploaded_bytes: 9000, ...over }), second, T0 + 1000).up_speed, 0, JSON.stringify(over));
  }
});

test('speed history is kept only for watched sessions and bounded', () => {
  const v = toView(session('a'), undefined, T0);
  const none = {};
  assert.equal(pushHistory(none, v, T0), none, 'the same object when nobody watches');
  let h = watchHistoryOf({}, 'a', true);
  assert.deepEqual(h, { a: [] });
  for (let i = 0; i < HISTORY + 5; i++) h = pushHistory(h, { ...v, up_speed: i }, T0 + i);
  assert.equal(h.a.length, HISTORY);
  assert.deepEqual(h.a.at(-1), [T0 + HISTORY + 4, HISTORY + 4, 0]);
  assert.equal(watchHistoryOf(h, 'a', true).a.length, HISTORY, 'watching again keeps what is there');
  assert.deepEqual(watchHistoryOf(h, 'a', false), {});
});

test('addListingPage: pages append in order; sessions created meanwhile stay on top, older shown ones wait for their page', () => {
  const shownSessions: Record<string, SessionView> = {
    new1: toView(session('new1', { created_at: '2026-11-22T12:00:00.000Z' }), undefined, T0),
    old: toView(session('old', { created_at: '2026-11-22T08:00:00.000Z' }), undefined, T0),
  };
  const shown = { sessions: shownSessions, sessionOrder: ['new1', 'old'] };
  const acc = { byId: {} as Record<string, SessionView>, order: [] as string[] };
  const page1 = [session('p1', { created_at: '2026-11-22T11:00:00.000Z' }), session('p2', { created_at: '2026-11-22T10:00:00.000Z' })];
  const r1 = addListingPage(acc, page1, shown, page1[0].created_at, T0);
  assert.deepEqual(r1.sessionOrder, ['new1', 'p1', 'p2']);
  assert.ok(r1.sessions.new1 && !r1.sessions.old);
  const page2 = [session('p2', { created_at: '2026-11-22T10:00:00.000Z' }), session('old', { created_at: '2026-11-22T08:00:00.000Z' })];
  const r2 = addListingPage(acc, page2, r1, page1[0].created_at, T0);
  assert.deepEqual(r2.sessionOrder, ['new1', 'p1', 'p2', 'old'], 'a repeat across pages is listed once');
});

test('mergeNewest: null when nothing changed, changed rows replaced, new ones sorted newest first', () => {
  const a = toView(session('a', { created_at: '2026-11-22T10:00:00.000Z' }), undefined, T0);
  const shown = { sessions: { a }, sessionOrder: ['a'] };
  assert.equal(mergeNewest(shown, [session('a', { created_at: a.created_at })], T0), null);
  const paused = mergeNewest(shown, [session('a', { created_at: a.created_at, paused: true })], T0);
  assert.equal(paused?.sessions.a.paused, true);
  assert.equal(paused?.sessionOrder, undefined, 'the order stays when no session is new');
  const over = mergeNewest(shown, [session('a', { created_at: a.created_at, over_quota: true, over_quota_until: '2026-11-23T00:00:00.000Z' })], T0);
  assert.equal(over?.sessions.a.over_quota, true, 'over quota is a change the list shows');
  const renewed = mergeNewest({ sessions: { a: over!.sessions.a }, sessionOrder: ['a'] }, [session('a', { created_at: a.created_at })], T0);
  assert.equal(renewed?.sessions.a.over_quota, undefined, 'and so is its end (a reset, a renewed period)');
  const more = mergeNewest(shown, [session('b', { created_at: '2026-11-22T11:00:00.000Z' }), session('c', { created_at: '2026-11-22T09:00:00.000Z' })], T0);
  assert.deepEqual(more?.sessionOrder, ['b', 'a', 'c']);
});

test('filterSessionIds and sessionTotals', () => {
  const rows: Record<string, SessionView> = {
    'aaaa-1': { ...toView(session('aaaa-1', { client_id: 'Alice', over_quota: true }), undefined, T0), up_speed: 10, down_speed: 20 },
    'bbbb-2': { ...toView(session('bbbb-2', { client_id: 'bob', zone: 'us-nyc', paused: true }), undefined, T0) },
    'cccc-3': { ...toView(session('cccc-3', { client_id: 'carol', status: 'ended' }), undefined, T0) },
  };
  const order = ['aaaa-1', 'bbbb-2', 'cccc-3', 'gone'];
  const none = { text: '', status: '', zone: '' };
  assert.equal(filterSessionIds(rows, order, none), order, 'no filter: the same array');
  assert.deepEqual(filterSessionIds(rows, order, { ...none, text: ' ALI ' }), ['aaaa-1']);
  assert.deepEqual(filterSessionIds(rows, order, { ...none, text: 'cccc' }), ['cccc-3'], 'an id prefix matches');
  assert.deepEqual(filterSessionIds(rows, order, { ...none, status: 'paused' }), ['bbbb-2']);
  assert.deepEqual(filterSessionIds(rows, order, { ...none, status: 'ended' }), ['cccc-3']);
  assert.deepEqual(filterSessionIds(rows, order, { ...none, status: 'over_quota' }), ['aaaa-1'], 'over quota: refused while a renewing cap is reached');
  assert.deepEqual(filterSessionIds(rows, order, { ...none, zone: 'us-nyc' }), ['bbbb-2']);
  assert.deepEqual(sessionTotals(rows, order), { active: 1, up: 10, down: 20, total: 4 });
});
