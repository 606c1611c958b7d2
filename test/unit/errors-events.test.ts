// Pure pieces of the error handling (codes, validation messages) and of the event stream
// (framing, filters, the bus).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, ERROR_STATUS } from '../../server/contract/errors.ts';
import { EventBus, matches } from '../../server/events/bus.ts';
import { errorFrame, frame } from '../../server/events/sse.ts';
import { describeValidation, toApiError } from '../../server/plugins/errors.ts';
import { openDatabase } from '../../server/store/db.ts';
import { Store } from '../../server/store/store.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

test('every decided error code exists with its status', () => {
  const decided: Record<string, number> = {
    invalid_request: 400, unauthorized: 401, forbidden: 403, not_found: 404, zone_not_found: 404, session_not_found: 404,
    limits_not_found: 404, subscription_not_found: 404, session_not_reusable: 400, session_already_paused: 400, session_not_paused: 400, session_ended: 400,
    zone_unavailable: 422, unsupported_connection_type: 422, method_not_allowed: 405, payload_too_large: 413,
    unsupported_media_type: 415, rate_limited: 429, internal_error: 500,
  };
  assert.deepEqual({ ...ERROR_STATUS }, decided);
  const e = new ApiError('zone_not_found', 'no', { zone: 'x' });
  assert.equal(e.statusCode, 404);
  assert.deepEqual(e.toBody(), { error: { code: 'zone_not_found', message: 'no', details: { zone: 'x' } } });
  assert.deepEqual(new ApiError('forbidden', 'm').toBody().error.details, {});
});

test('describeValidation names unknown, missing and invalid fields', () => {
  const e = describeValidation(
    [
      { instancePath: '', keyword: 'additionalProperties', params: { additionalProperty: 'colour' } },
      { instancePath: '', keyword: 'required', params: { missingProperty: 'zone' } },
      { instancePath: '/client_id', keyword: 'pattern', message: 'must match pattern' },
      { instancePath: '/client_id', keyword: 'type', message: 'must be string' },
      { instancePath: '/downloaded_bytes', keyword: 'anyOf', message: 'must match a schema in anyOf' },
    ],
    'body',
  );
  assert.equal(e.code, 'invalid_request');
  assert.equal(e.statusCode, 400);
  assert.deepEqual(e.details, {
    location: 'body',
    unknown_fields: ['colour'],
    fields: [
      { field: 'zone', problem: 'is required' },
      { field: 'client_id', problem: 'must match pattern' },
    ],
  });
  assert.match(e.message, /^Invalid request: unknown field: colour; zone is required; client_id must match pattern\.$/);
  const q = describeValidation([{ instancePath: '/limit', keyword: 'maximum', message: 'must be <= 500' }], 'querystring');
  assert.match(q.message, /^Invalid query parameter: limit must be <= 500\.$/);
  const empty = describeValidation([{ instancePath: '', keyword: 'minProperties' }], 'body');
  assert.deepEqual(empty.details.fields, [{ field: 'body', problem: 'must name at least one field' }]);
});

test('toApiError: framework errors map to their codes; anything else is internal_error without its message', () => {
  const fe = (code: string, statusCode?: number) => Object.assign(new Error(`secret ${code} at /work/x.ts:1`), { code, statusCode });
  assert.equal(toApiError(fe('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415)).code, 'unsupported_media_type');
  assert.equal(toApiError(fe('FST_ERR_CTP_BODY_TOO_LARGE', 413)).code, 'payload_too_large');
  assert.equal(toApiError(fe('FST_ERR_CTP_INVALID_JSON_BODY', 400)).code, 'invalid_request');
  assert.equal(toApiError(fe('FST_ERR_BAD_URL', 400)).code, 'invalid_request');
  assert.equal(toApiError(fe('FST_ERR_MAX_PARAM_LENGTH', 414)).code, 'invalid_request');
  assert.equal(toApiError(fe('SOMETHING', 413)).code, 'payload_too_large');
  assert.equal(toApiError(new SyntaxError('x')).code, 'invalid_request');
  const internal = toApiError(new Error('SQLITE_MISUSE: database is not open at /work/main/server/store/store.ts:12'));
  assert.equal(internal.code, 'internal_error');
  assert.equal(internal.statusCode, 500);
  assert.ok(!internal.message.includes('SQLITE') && !internal.message.includes('/work'));
  assert.deepEqual(internal.details, {});
  const own = new ApiError('session_ended', 'ended');
  assert.equal(toApiError(own), own);
});

test('SSE frames: id and data lines, no event line; error frames carry only data', () => {
  const e = { id: 42, session_id: 's', event_type: 'session_end' as const, created_at: '2026-11-22T10:04:05.123Z', duration: 1, downloaded_bytes: 2, uploaded_bytes: 3 };
  assert.equal(frame(e), `id: 42\ndata: ${JSON.stringify(e)}\n\n`);
  assert.equal(errorFrame({ error: { code: 'unauthorized' } }), 'data: {"error":{"code":"unauthorized"}}\n\n');
  // A newline inside a value can never break the framing: JSON escapes it.
  assert.equal(frame({ ...e, session_id: 'a\nb' }).split('\n').length, 4);
});

test('filters: session ids and types, each a set; empty lists mean everything', () => {
  const e = { id: 1, session_id: 's1', event_type: 'session_start' as const, created_at: '', duration: 0, downloaded_bytes: 0, uploaded_bytes: 0 };
  assert.equal(matches({}, e), true);
  assert.equal(matches({ sessionIds: [], types: [] }, e), true);
  assert.equal(matches({ sessionIds: ['s2', 's1'] }, e), true);
  assert.equal(matches({ sessionIds: ['s2'] }, e), false);
  assert.equal(matches({ types: ['session_end', 'session_start'] }, e), true);
  assert.equal(matches({ types: ['session_end'] }, e), false);
  assert.equal(matches({ sessionIds: ['s1'], types: ['session_end'] }, e), false);
});

test('the bus persists before delivering, with increasing ids, only to matching subscribers of the customer', () => {
  const dir = tempDir('vad-bus-');
  const store = new Store(openDatabase(dir));
  try {
    const bus = new EventBus(store);
    const got: Record<string, number[]> = { a: [], aEnd: [], b: [] };
    const unsubA = bus.subscribe({ customerId: 'A', filter: {}, deliver: (e) => {
      assert.equal(store.eventsAfter('A', e.id - 1, {}, 1)[0]?.id, e.id, 'stored before delivery');
      got.a.push(e.id);
    } });
    bus.subscribe({ customerId: 'A', filter: { types: ['session_end'] }, deliver: (e) => got.aEnd.push(e.id) });
    bus.subscribe({ customerId: 'B', filter: {}, deliver: (e) => got.b.push(e.id) });
    assert.equal(bus.subscriberCount, 3);
    const ids = [
      bus.publish({ customerId: 'A', sessionId: 's', type: 'session_start', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0 }).id,
      bus.publish({ customerId: 'A', sessionId: 's', type: 'session_end', duration: 5, uploaded_bytes: 1, downloaded_bytes: 2 }).id,
      bus.publish({ customerId: 'C', sessionId: 't', type: 'session_end', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0 }).id,
    ];
    assert.ok(ids[0] < ids[1] && ids[1] < ids[2]);
    assert.deepEqual(got, { a: [ids[0], ids[1]], aEnd: [ids[1]], b: [] });
    unsubA();
    assert.equal(bus.subscriberCount, 2);
    const stored = store.eventsAfter('A', 0, {}, 10);
    assert.deepEqual(stored.map((e) => [e.id, e.event_type, e.duration, e.uploaded_bytes, e.downloaded_bytes]), [
      [ids[0], 'session_start', 0, 0, 0],
      [ids[1], 'session_end', 5, 1, 2],
    ]);
  } finally {
    store.db.close();
    removeDir(dir);
  }
});
