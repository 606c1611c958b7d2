// The SSE framing of events/sse.ts: events and error records.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorFrame, frame } from '../../server/events/sse.ts';

test('SSE frames: id and data lines, no event line; error frames carry only data', () => {
  const e = { id: 42, session_id: 's', event_type: 'session_end' as const, created_at: '2026-11-22T10:04:05.123Z', duration: 1, downloaded_bytes: 2, uploaded_bytes: 3 };
  assert.equal(frame(e), `id: 42\ndata: ${JSON.stringify(e)}\n\n`);
  assert.equal(errorFrame({ error: { code: 'unauthorized' } }), 'data: {"error":{"code":"unauthorized"}}\n\n');
  // A newline inside a value can never break the framing: JSON escapes it.
  assert.equal(frame({ ...e, session_id: 'a\nb' }).split('\n').length, 4);
});
