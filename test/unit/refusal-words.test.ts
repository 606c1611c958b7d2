// The Refusals card's words (renderer/src/lib/refusal-words.ts): each reason says what happened,
// what fixes it, and links where the fix is (the limits screen, the session that decides it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refusalWords } from '../../renderer/src/lib/refusal-words.ts';

test('each reason in words, with its fix and where', () => {
  const ctx = { clientId: 'bob' };
  assert.equal(`${refusalWords('paused', ctx).what}: ${refusalWords('paused', ctx).fix}`, 'Paused: press Resume.');
  const cap = refusalWords('client_cap', { ...ctx, clientPeriod: 'month', quotaUntil: '2026-12-01T00:00:00.000Z' });
  assert.match(cap.what, /^Client over its monthly byte cap until /);
  assert.equal(cap.fix, 'raise the cap or wait.');
  assert.deepEqual(cap.link, { kind: 'limits', scope: 'client', label: 'Client limits' });
  const max = refusalWords('max_sessions', { ...ctx, maxSessions: 2, otherActive: 'abcdef12-0000-4000-8000-000000000000' });
  assert.match(max.what, /^max_sessions 2 reached/);
  assert.deepEqual(max.link, { kind: 'session', id: 'abcdef12-0000-4000-8000-000000000000', label: 'the active session abcdef12' });
  assert.equal(refusalWords('max_sessions', ctx).link?.kind, 'client', 'no active session known: the client\'s sessions');
  assert.match(refusalWords('proxy_auth_required', ctx).what, /407/);
  assert.match(refusalWords('proxy_unknown_param', ctx).what, /malformed user name/);
  assert.match(refusalWords('client_disabled', ctx).fix, /enable the client/);
  assert.deepEqual(refusalWords('something_new', ctx), { what: 'something_new', fix: 'see the server\'s log for this reason.' });
});
