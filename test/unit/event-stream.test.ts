// common/event-stream.ts: the one reconnecting event-stream client, run with the real
// `eventsource` package against a real small HTTP server on loopback that speaks the
// API's stream format (id + JSON data), drops connections and refuses on demand.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { EventSource } from 'eventsource';
import { backoffDelay, eventsUrl, EventStream } from '../../common/event-stream.ts';
import type { SessionEvent, StreamState } from '../../common/api-types.ts';
import type { ApiErrorInfo } from '../../common/result.ts';

interface Seen {
  url: URL;
  lastEventId: string | undefined;
  authorization: string | undefined;
}

/** A stream server whose answer to the n-th request (0-based) is decided by `answer`. */
async function streamServer(t: TestContext, answer: (n: number, req: IncomingMessage, res: ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const n = seen.length;
    seen.push({
      url: new URL(req.url ?? '/', 'http://x'),
      lastEventId: req.headers['last-event-id'] as string | undefined,
      authorization: req.headers.authorization,
    });
    answer(n, req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2`;
  return { seen, baseUrl };
}

function event(id: number): SessionEvent {
  return {
    id,
    event_type: 'session_stats',
    session_id: 's-1',
    created_at: new Date().toISOString(),
    duration: id,
    uploaded_bytes: id * 10,
    downloaded_bytes: id * 20,
  } as SessionEvent;
}

function open(res: ServerResponse, retryMs = 20): void {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.write(`retry: ${retryMs}\n\n`);
}
function send(res: ServerResponse, id: number): void {
  res.write(`id: ${id}\ndata: ${JSON.stringify(event(id))}\n\n`);
}

/** Waits until `check` holds, polling every 10 ms, at most `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (let waited = 0; !check(); waited += 10) {
    if (waited >= ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function recorder() {
  const events: number[] = [];
  const states: Array<[StreamState, ApiErrorInfo | undefined]> = [];
  return { events, states, onEvent: (e: SessionEvent) => events.push(e.id), onState: (s: StreamState, e?: ApiErrorInfo) => states.push([s, e]) };
}

/** A retryDelay that answers 10 ms and records each attempt number it is asked about. */
function quickRetry() {
  const attempts: number[] = [];
  return {
    attempts,
    retryDelay: (attempt: number) => {
      attempts.push(attempt);
      return 10;
    },
  };
}

test('a dropped connection resumes with Last-Event-ID, and a replayed event is not delivered twice', async (t) => {
  const { seen, baseUrl } = await streamServer(t, (n, _req, res) => {
    open(res);
    if (n === 0) {
      send(res, 1);
      send(res, 2);
      // Drop the connection once both events are written.
      setTimeout(() => res.socket?.destroy(), 50);
    } else {
      send(res, 2); // the server replays from the id it was given: 2 is already delivered
      send(res, 3);
    }
  });
  const r = recorder();
  const stream = new EventStream({ EventSource, endpoint: () => ({ baseUrl, token: 'vad_test' }), filter: {}, ...r });
  t.after(() => stream.close());
  await until(() => r.events.length >= 3, 'three events');
  assert.deepEqual(r.events, [1, 2, 3]);
  assert.equal(stream.lastEventId, 3);
  assert.equal(seen.length, 2);
  // The first connection asks for the recent tail, and carries the token.
  assert.equal(seen[0].url.pathname, '/v2/sessions/events');
  assert.equal(seen[0].url.searchParams.get('tail'), '200');
  assert.equal(seen[0].lastEventId, undefined);
  assert.equal(seen[0].authorization, 'Bearer vad_test');
  // The EventSource's own reconnect resumes after the last id it saw.
  assert.equal(seen[1].lastEventId, '2');
  assert.equal(seen[1].authorization, 'Bearer vad_test');
  const reconnecting = r.states.find(([s, e]) => s === 'reconnecting' && e?.code === 'network_error');
  assert.ok(reconnecting, `a network drop is reported: ${JSON.stringify(r.states)}`);
  assert.deepEqual(r.states.at(-1), ['open', undefined]);
});

test('refusals back off (attempt 1, 2, ...) and retry with last_event_id; the error record names the status', async (t) => {
  const { seen, baseUrl } = await streamServer(t, (n, _req, res) => {
    if (n === 0) {
      res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '1' });
      res.end('{"error":{"code":"rate_limited","message":"slow down","details":{}}}');
    } else if (n === 1 || n === 2) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{"error":{"code":"internal_error","message":"boom","details":{}}}');
    } else {
      open(res);
      send(res, 6);
    }
  });
  const r = recorder();
  const { attempts, retryDelay } = quickRetry();
  const stream = new EventStream({
    EventSource,
    endpoint: () => ({ baseUrl, token: 'vad_test' }),
    filter: { last_event_id: 5, session_id: ['a', 'b'], event_type: ['session_end'] },
    retryDelay,
    ...r,
  });
  t.after(() => stream.close());
  await until(() => r.events.length >= 1, 'the event after the refusals');
  assert.deepEqual(r.events, [6]);
  assert.deepEqual(attempts, [1, 2, 3], 'each refusal is one more attempt');
  assert.equal(seen.length, 4);
  for (const s of seen) {
    // Every retry resumes from the id it was asked to, with the filter, and without a tail.
    assert.equal(s.url.searchParams.get('last_event_id'), '5');
    assert.deepEqual(s.url.searchParams.getAll('session_id'), ['a', 'b']);
    assert.deepEqual(s.url.searchParams.getAll('event_type'), ['session_end']);
    assert.equal(s.url.searchParams.get('tail'), null);
  }
  const errors = r.states.filter(([s, e]) => s === 'reconnecting' && e).map(([, e]) => [e!.status, e!.code]);
  assert.deepEqual(errors, [
    [429, 'rate_limited'],
    [500, 'http_500'],
    [500, 'http_500'],
  ]);
  assert.deepEqual(r.states.at(-1), ['open', undefined]);
});

test('after an open connection the backoff starts again from attempt 1', async (t) => {
  const { baseUrl } = await streamServer(t, (n, _req, res) => {
    if (n === 0 || n === 2) {
      res.writeHead(503);
      res.end();
    } else if (n === 1) {
      open(res);
      send(res, 1);
      // A clean end followed by a refusal on the EventSource's own reconnect.
      setTimeout(() => res.end(), 30);
    } else {
      open(res);
      send(res, 2);
    }
  });
  const r = recorder();
  const { attempts, retryDelay } = quickRetry();
  const stream = new EventStream({ EventSource, endpoint: () => ({ baseUrl, token: 't' }), filter: {}, retryDelay, ...r });
  t.after(() => stream.close());
  await until(() => r.events.length >= 2, 'two events');
  assert.deepEqual(r.events, [1, 2]);
  assert.deepEqual(attempts, [1, 1]);
});

test('backoffDelay doubles from 1 s to a 30 s ceiling, spread by ±25%', () => {
  const mid = () => 0.5;
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 50].map((a) => backoffDelay(a, mid)), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  assert.equal(backoffDelay(1, () => 0), 750);
  assert.equal(backoffDelay(1, () => 1), 1250);
  assert.equal(backoffDelay(0, mid), 1000, 'attempt 0 counts as the first');
  for (let a = 1; a < 12; a++) {
    const d = backoffDelay(a);
    assert.ok(d >= 750 && d <= 37_500, `attempt ${a}: ${d}`);
  }
});

test('eventsUrl: tail on a first connection, last_event_id afterwards, filters as repeated keys', () => {
  assert.equal(eventsUrl('http://h/v2', {}, undefined), 'http://h/v2/sessions/events?tail=200');
  assert.equal(eventsUrl('http://h/v2', { session_id: ['x'] }, 0), 'http://h/v2/sessions/events?session_id=x&last_event_id=0');
  assert.equal(eventsUrl('http://h/v2', { event_type: ['session_start', 'session_end'] }, 7), 'http://h/v2/sessions/events?event_type=session_start&event_type=session_end&last_event_id=7');
});

test('restart keeps the last id for the same server and drops it with fresh; close stops for good', async (t) => {
  const { seen, baseUrl } = await streamServer(t, (n, _req, res) => {
    open(res);
    if (n === 0) send(res, 4);
  });
  const r = recorder();
  const stream = new EventStream({ EventSource, endpoint: () => ({ baseUrl, token: 't' }), filter: {}, ...r });
  await until(() => r.events.length === 1, 'the first event');
  stream.restart();
  await until(() => seen.length === 2, 'the restart');
  assert.equal(seen[1].url.searchParams.get('last_event_id'), '4');
  stream.restart({ fresh: true });
  await until(() => seen.length === 3, 'the fresh restart');
  assert.equal(seen[2].url.searchParams.get('last_event_id'), null);
  assert.equal(seen[2].url.searchParams.get('tail'), '200');
  assert.equal(stream.lastEventId, undefined);
  await until(() => r.states.at(-1)?.[0] === 'open', 'open after the restart');
  stream.close();
  assert.deepEqual(r.states.at(-1), ['closed', undefined]);
  stream.restart(); // a closed stream stays closed
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(seen.length, 3, 'no connection after close');
});

test('without an endpoint the stream reports closed with 401 and opens nothing', () => {
  const r = recorder();
  const stream = new EventStream({ EventSource, endpoint: () => null, filter: {}, ...r });
  assert.equal(r.states.length, 1);
  assert.equal(r.states[0][0], 'closed');
  assert.equal(r.states[0][1]?.status, 401);
  stream.close();
});
