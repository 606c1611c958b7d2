// main/live.ts: the tray's view of the sessions stays bounded: ended sessions are not kept, and
// past MAX_KEPT_SESSIONS the oldest idle ones go, never an active or paused one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '../../common/api-types.ts';
import { LiveState, MAX_KEPT_SESSIONS } from '../../main/live.ts';

const session = (id: string, status: Session['status'], paused = false): Session =>
  ({ id, client_id: 'c', zone: 'de-fra', paused, reusable: true, status, uploaded_bytes: 0, downloaded_bytes: 0 }) as unknown as Session;

test('an ended session is returned to the caller but not kept', () => {
  const live = new LiveState();
  live.put(session('a', 'active'));
  const ended = live.put(session('a', 'ended'));
  assert.equal(ended.status, 'ended');
  assert.equal(live.sessions.has('a'), false);
});

test('the map never grows past its bound, and active or paused sessions are never dropped', () => {
  const live = new LiveState();
  live.put(session('active-1', 'active'));
  live.put(session('paused-1', 'idle', true));
  for (let i = 0; i < MAX_KEPT_SESSIONS * 3; i++) live.put(session(`idle-${i}`, 'idle'));
  assert.ok(live.sessions.size <= MAX_KEPT_SESSIONS, `size ${live.sessions.size}`);
  assert.ok(live.sessions.has('active-1'));
  assert.ok(live.sessions.has('paused-1'));
  assert.ok(live.sessions.has(`idle-${MAX_KEPT_SESSIONS * 3 - 1}`), 'the newest idle session is kept');
  assert.equal(live.sessions.has('idle-0'), false, 'the oldest idle session went first');
});
