// The admission check on its own: pure functions over plain facts, no store and no sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type LimitFacts, refusalByLimits, refusalOfSession } from '../../server/dataplane/admission.ts';

const zero = () => ({ up: 0, down: 0 });

function facts(over: Partial<LimitFacts> = {}): LimitFacts {
  return {
    reusable: true,
    connections: 0,
    openConnections: 0,
    activeSessionsOfClient: 0,
    limits: {},
    totals: { session: zero(), client: zero(), customer: zero() },
    ...over,
  };
}

test('refusalOfSession: closing or unknown, then ended (stored, live or capped), then paused', () => {
  const row = { status: 'created' as const, paused: false };
  assert.equal(refusalOfSession({ closing: false, row }), undefined);
  assert.equal(refusalOfSession({ closing: true, row }), 'unknown');
  assert.equal(refusalOfSession({ closing: false, row: undefined }), 'unknown');
  assert.equal(refusalOfSession({ closing: false, row: { status: 'ended', paused: true } }), 'ended');
  assert.equal(refusalOfSession({ closing: false, row, live: { status: 'ended', capped: false } }), 'ended');
  assert.equal(refusalOfSession({ closing: false, row, live: { status: 'active', capped: true } }), 'ended');
  assert.equal(refusalOfSession({ closing: false, row: { status: 'idle', paused: true } }), 'paused');
  assert.equal(refusalOfSession({ closing: false, row, live: { status: 'idle', capped: false } }), undefined);
});

test('refusalByLimits: a one-time session takes one connection ever', () => {
  assert.equal(refusalByLimits(facts({ reusable: false })), undefined);
  assert.equal(refusalByLimits(facts({ reusable: false, connections: 1 })), 'not_reusable');
});

test('refusalByLimits: max_reconnections counts connections after the first', () => {
  const limits = { client: { max_reconnections: 2 } };
  assert.equal(refusalByLimits(facts({ limits, connections: 2 })), undefined);
  assert.equal(refusalByLimits(facts({ limits, connections: 3 })), 'max_reconnections');
  assert.equal(refusalByLimits(facts({ limits: { client: { max_reconnections: 0 } }, connections: 1 })), 'max_reconnections');
});

test('refusalByLimits: max_sessions counts active sessions, and only a first open connection is checked', () => {
  const limits = { client: { max_sessions: 1 } };
  assert.equal(refusalByLimits(facts({ limits, activeSessionsOfClient: 0 })), undefined);
  assert.equal(refusalByLimits(facts({ limits, activeSessionsOfClient: 1 })), 'max_sessions');
  // A second connection of a session already open is not a new session.
  assert.equal(refusalByLimits(facts({ limits, activeSessionsOfClient: 1, openConnections: 1, connections: 1 })), undefined);
});

test('refusalByLimits: byte caps from the narrowest level to the widest, reached at equality', () => {
  const at = (n: number) => ({ up: n, down: 0 });
  const limits = { session: { uploaded_bytes: 10 }, client: { uploaded_bytes: 20 }, global: { uploaded_bytes: 30 } };
  assert.equal(refusalByLimits(facts({ limits, totals: { session: at(9), client: at(19), customer: at(29) } })), undefined);
  assert.equal(refusalByLimits(facts({ limits, totals: { session: at(10), client: at(20), customer: at(30) } })), 'session_cap');
  assert.equal(refusalByLimits(facts({ limits, totals: { session: at(0), client: at(20), customer: at(30) } })), 'client_cap');
  assert.equal(refusalByLimits(facts({ limits, totals: { session: at(0), client: at(0), customer: at(30) } })), 'global_cap');
  // Downloads are capped the same way.
  assert.equal(refusalByLimits(facts({ limits: { global: { downloaded_bytes: 5 } }, totals: { session: zero(), client: zero(), customer: { up: 0, down: 5 } } })), 'global_cap');
});

test('refusalByLimits: the reuse and count limits come before the byte caps', () => {
  const overAll = { session: { up: 99, down: 0 }, client: zero(), customer: zero() };
  const limits = { session: { uploaded_bytes: 1 } };
  assert.equal(refusalByLimits(facts({ reusable: false, connections: 1, limits, totals: overAll })), 'not_reusable');
  assert.equal(refusalByLimits(facts({ limits, totals: overAll })), 'session_cap');
});

test('refusalByLimits: a session at its open-connection cap is refused', () => {
  assert.equal(refusalByLimits(facts({ openConnections: 63, maxOpenConnections: 64 })), undefined);
  assert.equal(refusalByLimits(facts({ openConnections: 64, maxOpenConnections: 64 })), 'too_many_connections');
  assert.equal(refusalByLimits(facts({ openConnections: 1000 })), undefined, 'no cap given, none applied');
});

test('refusalByLimits: max_devices (a subscription-feed limit) is never an admission limit', () => {
  const limits = { client: { max_devices: 1 }, global: { max_devices: 1 }, session: { max_devices: 1 } } as LimitFacts['limits'];
  const big = { up: 10 ** 12, down: 10 ** 12 };
  assert.equal(refusalByLimits(facts({ limits, activeSessionsOfClient: 50, connections: 9, totals: { session: big, client: big, customer: big } })), undefined);
});
