// renderer/src/store/event-merge.ts: a batch of stream events merged into the event list and
// the session rows. Pure, so plain values in and out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session, SessionEvent } from '../../common/api-types.ts';
import { isLive, LIVE_WINDOW_MS, MAX_EVENTS, mergeEventBatch } from '../../renderer/src/store/event-merge.ts';
import { toView, type SessionView } from '../../renderer/src/store/session-view.ts';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');

function row(id: string, over: Partial<Session> = {}): SessionView {
  const s = { id, client_id: id, zone: 'de-fra', status: 'created', paused: false, reusable: true, created_at: '2026-11-22T09:00:00.000Z', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0, ...over } as Session;
  return toView(s, undefined, NOW - 1000);
}

function ev(id: number, session_id: string, event_type: SessionEvent['event_type'], over: Partial<SessionEvent> = {}): SessionEvent {
  return { id, session_id, event_type, created_at: new Date(NOW - 100).toISOString(), duration: 5, uploaded_bytes: 100, downloaded_bytes: 200, ...over } as SessionEvent;
}

test('isLive: recent events, and events without a readable time, are live', () => {
  assert.equal(isLive(ev(1, 'a', 'session_stats'), NOW), true);
  assert.equal(isLive(ev(1, 'a', 'session_stats', { created_at: new Date(NOW - LIVE_WINDOW_MS - 1).toISOString() }), NOW), false);
  assert.equal(isLive(ev(1, 'a', 'session_stats', { created_at: 'not a time' }), NOW), true);
});

test('a batch updates counters, status and history of known sessions, and lists events newest first', () => {
  const st = { sessions: { a: row('a') }, speedHistory: { a: [] as Array<[number, number, number]> }, events: [ev(1, 'a', 'session_stats')] };
  const r = mergeEventBatch(st, [ev(2, 'a', 'session_start', { uploaded_bytes: 0, downloaded_bytes: 0 }), ev(3, 'a', 'session_stats', { uploaded_bytes: 1000, downloaded_bytes: 3000 })], NOW);
  assert.deepEqual(r.events.map((e) => e.id), [3, 2, 1]);
  assert.equal(r.lastEventId, 3);
  assert.equal(r.sessions.a.status, 'active');
  assert.equal(r.sessions.a.uploaded_bytes, 1000);
  assert.equal(r.sessions.a.duration, 5);
  assert.equal(r.speedHistory.a.length, 2);
  assert.deepEqual(r.needRefresh, ['a'], 'a start asks the server for the session');
  assert.notEqual(r.sessions, st.sessions, 'the input is not changed');
  assert.equal(st.sessions.a.status, 'created');
});

test('counters never go back; an end keeps the status until the server says idle or ended', () => {
  const st = { sessions: { a: row('a', { status: 'active', uploaded_bytes: 5000, downloaded_bytes: 9000 }) }, speedHistory: {}, events: [] };
  const r = mergeEventBatch(st, [ev(7, 'a', 'session_end', { uploaded_bytes: 10, downloaded_bytes: 10 })], NOW);
  assert.equal(r.sessions.a.uploaded_bytes, 5000);
  assert.equal(r.sessions.a.downloaded_bytes, 9000);
  assert.equal(r.sessions.a.status, 'active');
  assert.deepEqual(r.needRefresh, ['a']);
  assert.deepEqual(r.speedHistory, {}, 'no history for an unwatched session');
});

test('unknown sessions are looked up; replayed history only fills the list', () => {
  const st = { sessions: { a: row('a') }, speedHistory: {}, events: [] };
  const old = new Date(NOW - LIVE_WINDOW_MS - 5000).toISOString();
  const r = mergeEventBatch(st, [ev(1, 'a', 'session_start', { created_at: old }), ev(2, 'zzz', 'session_stats')], NOW);
  assert.equal(r.sessions.a.status, 'created', 'history does not move the session');
  assert.deepEqual(r.needRefresh, ['zzz']);
  assert.deepEqual(r.events.map((e) => e.id), [2, 1]);
});

test('the event list is bounded', () => {
  const many = Array.from({ length: MAX_EVENTS + 10 }, (_, i) => ev(i + 1, 'x', 'session_heartbeat', { created_at: '2020-01-01T00:00:00.000Z' }));
  const r = mergeEventBatch({ sessions: {}, speedHistory: {}, events: [] }, many, NOW);
  assert.equal(r.events.length, MAX_EVENTS);
  assert.equal(r.events[0].id, MAX_EVENTS + 10);
});
