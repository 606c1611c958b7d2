// The event stream against a real listening server: framing, live delivery with the real
// `eventsource` client, filters, replay, reconnection with no gap and no duplicate under load,
// 401 framing, tenancy, and the bound on a slow consumer.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { EventType, SessionEvent } from '../../server/contract/schemas.ts';
import { auth, ISO_MS_Z, listen, type TestListening, waitFor } from '../helpers/server.ts';
import { eventSource, openRaw } from '../helpers/sse.ts';

let srv: TestListening;
let acme: string; // customer id of the owner token
let other: string; // token of another customer
let otherCustomer: string;
before(async () => {
  srv = await listen({ sse: { keepAliveMs: 100, retryMs: 3000 } });
  acme = srv.services.sqlite!.store.findToken(srv.owner)!.customer_id;
  other = srv.services.sqlite!.store.createToken('globex', 'owner').token;
  otherCustomer = srv.services.sqlite!.store.findToken(other)!.customer_id;
});
after(async () => {
  await srv.stop();
});

function publish(sessionId: string, type: EventType = 'session_stats', customerId = acme, n = 0): SessionEvent {
  return srv.services.sqlite!.bus.publish({ customerId, sessionId, type, duration: n, uploaded_bytes: n * 10, downloaded_bytes: n * 20 });
}

const url = (qs = '') => `${srv.baseUrl}/sessions/events${qs}`;

describe('framing', () => {
  test('retry: first, then id:/data: frames without event:, and keep-alive comments', async () => {
    const st = await openRaw(url(), auth(srv.owner));
    try {
      assert.equal(st.status, 200);
      assert.match(String(st.headers['content-type']), /^text\/event-stream/);
      assert.match(String(st.headers['cache-control']), /no-cache/);
      for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) assert.ok(st.headers[h], h);
      await waitFor(() => st.text().length > 0, 3000, 'the first bytes');
      assert.ok(st.text().startsWith('retry: 3000\n\n'), JSON.stringify(st.text().slice(0, 40)));
      const start = st.events().length;
      const sent = [publish('frame-a', 'session_start'), publish('frame-a', 'session_stats', acme, 3), publish('frame-b', 'session_end')];
      await waitFor(() => st.events().length >= start + 3, 3000, 'three events');
      await waitFor(() => st.frames().filter((f) => f.startsWith(':')).length >= 2, 3000, 'keep-alive comments');
      const frames = st.frames();
      assert.equal(frames[0], 'retry: 3000');
      for (const f of frames.slice(1)) {
        if (f.startsWith(':')) {
          assert.match(f, /^:[^\n]*$/, 'a comment is one line');
          continue;
        }
        const lines = f.split('\n');
        assert.equal(lines.length, 2, `exactly id: and data: in ${JSON.stringify(f)}`);
        assert.match(lines[0], /^id: \d+$/);
        assert.match(lines[1], /^data: \{/);
        assert.ok(!f.includes('event:'));
        const e = JSON.parse(lines[1].slice(6));
        assert.equal(`id: ${e.id}`, lines[0], 'the frame id is the event id');
      }
      const got = st.events().slice(start);
      assert.deepEqual(got, sent);
      for (const e of got) {
        assert.deepEqual(Object.keys(e).sort(), ['created_at', 'downloaded_bytes', 'duration', 'event_type', 'id', 'session_id', 'uploaded_bytes']);
        assert.ok(Number.isInteger(e.id) && e.id > 0);
        assert.match(e.created_at, ISO_MS_Z);
      }
      assert.deepEqual(got.map((e) => [e.session_id, e.event_type, e.duration, e.uploaded_bytes, e.downloaded_bytes]), [
        ['frame-a', 'session_start', 0, 0, 0],
        ['frame-a', 'session_stats', 3, 30, 60],
        ['frame-b', 'session_end', 0, 0, 0],
      ]);
      assert.ok(got[0].id < got[1].id && got[1].id < got[2].id);
    } finally {
      st.close();
    }
  });

  test('HEAD answers the stream headers and ends, registering no stream', async () => {
    await waitFor(() => srv.services.streams.size === 0, 3000, 'earlier streams to close');
    const res = await fetch(url(), { method: 'HEAD', headers: auth(srv.owner) });
    assert.equal(res.status, 200);
    assert.match(String(res.headers.get('content-type')), /^text\/event-stream/);
    assert.equal(srv.services.streams.size, 0);
    assert.equal(srv.services.sqlite!.bus.subscriberCount, 0);
    const unauth = await fetch(url(), { method: 'HEAD' });
    assert.equal(unauth.status, 401);
  });

  test('the eventsource client receives every kind through onmessage, with lastEventId', async () => {
    const es = eventSource(url(`?session_id=es-live`), srv.owner);
    const got: { data: SessionEvent; lastEventId: string; type: string }[] = [];
    es.onmessage = (m) => got.push({ data: JSON.parse(m.data), lastEventId: m.lastEventId, type: m.type });
    try {
      await new Promise<void>((resolve, reject) => {
        es.onopen = () => resolve();
        es.onerror = (e) => reject(new Error(`error ${e.code} ${e.message}`));
      });
      const types: EventType[] = ['session_start', 'session_heartbeat', 'session_stats', 'session_end'];
      const sent = types.map((t, i) => publish('es-live', t, acme, i));
      await waitFor(() => got.length >= 4, 3000, 'four events');
      assert.deepEqual(got.map((g) => g.data), sent);
      assert.deepEqual(got.map((g) => g.type), ['message', 'message', 'message', 'message']);
      assert.deepEqual(got.map((g) => g.lastEventId), sent.map((e) => String(e.id)));
    } finally {
      es.close();
    }
  });
});

describe('filters and replay', () => {
  let seeded: SessionEvent[];
  before(() => {
    seeded = [];
    const plan: [string, EventType][] = [
      ['f-1', 'session_start'],
      ['f-2', 'session_start'],
      ['f-1', 'session_stats'],
      ['f-3', 'session_heartbeat'],
      ['f-2', 'session_stats'],
      ['f-1', 'session_end'],
      ['f-3', 'session_end'],
    ];
    for (const [sid, t] of plan) seeded.push(publish(sid, t));
  });
  const since = () => seeded[0].id - 1;

  async function replay(qs: string, headers: Record<string, string> = {}): Promise<SessionEvent[]> {
    const st = await openRaw(url(qs), { ...auth(srv.owner), ...headers });
    try {
      assert.equal(st.status, 200);
      // The replay is written at once; wait for the first keep-alive after it.
      await waitFor(() => st.frames().some((f) => f.startsWith(':')), 3000, 'replay and a keep-alive');
      return st.events();
    } finally {
      st.close();
    }
  }
  const ids = (list: SessionEvent[]) => list.map((e) => e.id);

  test('Last-Event-ID header replays every later stored event, in order', async () => {
    const got = await replay('', { 'last-event-id': String(since()) });
    assert.deepEqual(got.filter((e) => e.id <= seeded[seeded.length - 1].id), seeded);
    const mid = await replay('', { 'last-event-id': String(seeded[3].id) });
    assert.deepEqual(ids(mid.filter((e) => e.id <= seeded[6].id)), ids(seeded.slice(4)));
  });

  test('last_event_id query parameter does the same; the header wins when both are sent', async () => {
    const q = await replay(`?last_event_id=${seeded[4].id}`);
    assert.deepEqual(ids(q.filter((e) => e.id <= seeded[6].id)), ids(seeded.slice(5)));
    const both = await replay(`?last_event_id=${seeded[0].id}`, { 'last-event-id': String(seeded[5].id) });
    assert.deepEqual(ids(both.filter((e) => e.id <= seeded[6].id)), [seeded[6].id]);
  });

  test('tail (extension) replays only the newest matching events; tail=0 is live only; Last-Event-ID wins', async () => {
    const f1 = seeded.filter((e) => e.session_id === 'f-1');
    const two = await replay('?session_id=f-1&tail=2');
    assert.deepEqual(ids(two), ids(f1.slice(-2)));
    const more = await replay('?session_id=f-1&tail=50');
    assert.deepEqual(ids(more), ids(f1));
    const none = await replay('?session_id=f-1&tail=0');
    assert.deepEqual(none, []);
    const header = await replay('?session_id=f-1&tail=0', { 'last-event-id': String(since()) });
    assert.deepEqual(ids(header), ids(f1));
    const st = await openRaw(url('?tail=-1'), auth(srv.owner));
    try {
      assert.equal(st.status, 400);
    } finally {
      st.close();
    }
  });

  test('without Last-Event-ID the whole stored history is replayed', async () => {
    const all = await replay('');
    for (const e of seeded) assert.ok(all.some((x) => x.id === e.id));
    const sorted = [...ids(all)].sort((a, b) => a - b);
    assert.deepEqual(ids(all), sorted);
  });

  test('session_id and event_type filters, each repeatable, combined with replay', async () => {
    const after = { 'last-event-id': String(since()) };
    const bySession = await replay('?session_id=f-1', after);
    assert.deepEqual(ids(bySession), ids(seeded.filter((e) => e.session_id === 'f-1')));
    const twoSessions = await replay('?session_id=f-1&session_id=f-3', after);
    assert.deepEqual(ids(twoSessions), ids(seeded.filter((e) => e.session_id === 'f-1' || e.session_id === 'f-3')));
    const byType = await replay('?event_type=session_end', after);
    assert.deepEqual(ids(byType.filter((e) => e.id <= seeded[6].id)), ids(seeded.filter((e) => e.event_type === 'session_end')));
    const twoTypes = await replay('?event_type=session_start&event_type=session_heartbeat', after);
    assert.deepEqual(
      ids(twoTypes.filter((e) => e.id <= seeded[6].id)),
      ids(seeded.filter((e) => e.event_type === 'session_start' || e.event_type === 'session_heartbeat')),
    );
    const both = await replay('?session_id=f-2&event_type=session_stats', after);
    assert.deepEqual(ids(both), [seeded[4].id]);
  });

  test('filters apply to live events too', async () => {
    const st = await openRaw(url('?session_id=live-f&event_type=session_end&event_type=session_start'), auth(srv.owner));
    try {
      await waitFor(() => st.text().startsWith('retry:'), 3000, 'open');
      const wanted = [publish('live-f', 'session_start')];
      publish('live-f', 'session_stats');
      publish('live-g', 'session_end');
      wanted.push(publish('live-f', 'session_end'));
      await waitFor(() => st.events().length >= 2, 3000, 'two events');
      await waitFor(() => st.frames().filter((f) => f.startsWith(':')).length >= 1, 3000, 'a keep-alive');
      assert.deepEqual(st.events(), wanted);
    } finally {
      st.close();
    }
  });

  test('400 on invalid filter and resume values, framed as an event', async () => {
    for (const [qs, headers] of [
      ['?event_type=session_paused', {}],
      ['?last_event_id=abc', {}],
      ['?last_event_id=-1', {}],
      ['?bogus=1', {}],
      ['', { 'last-event-id': 'abc' }],
      ['', { 'last-event-id': '99999999999999999' }],
    ] as [string, Record<string, string>][]) {
      const st = await openRaw(url(qs), { ...auth(srv.owner), ...headers });
      await st.ended;
      assert.equal(st.status, 400, qs);
      assert.match(String(st.headers['content-type']), /^text\/event-stream/);
      const m = /^data: (.*)\n\n$/.exec(st.text());
      assert.ok(m, st.text());
      assert.equal(JSON.parse(m[1]).error.code, 'invalid_request');
    }
  });
});

describe('authentication and tenancy', () => {
  test('401 is text/event-stream with the error record as data:, and the stream closes', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: 'Basic x y' }] as Record<string, string>[]) {
      const st = await openRaw(url(), headers);
      await st.ended;
      assert.equal(st.status, 401);
      assert.match(String(st.headers['content-type']), /^text\/event-stream/);
      const m = /^data: (.*)\n\n$/.exec(st.text());
      assert.ok(m, st.text());
      const body = JSON.parse(m[1]);
      assert.equal(body.error.code, 'unauthorized');
      assert.equal(typeof body.error.message, 'string');
      assert.deepEqual(body.error.details, {});
    }
  });

  test('the eventsource client gets an error with code 401 and does not retry', async () => {
    const es = eventSource(url(), 'vad_wrong');
    try {
      const err = await new Promise<{ code?: number }>((resolve) => {
        es.onerror = (e) => resolve(e);
      });
      assert.equal(err.code, 401);
      assert.equal(es.readyState, es.CLOSED);
    } finally {
      es.close();
    }
  });

  test("a customer never receives another customer's events, live or replayed", async () => {
    const mine = await openRaw(url(), auth(srv.owner));
    const theirs = await openRaw(url(), auth(other));
    try {
      await waitFor(() => mine.text().startsWith('retry:') && theirs.text().startsWith('retry:'), 3000, 'open');
      const a = publish('tenant-a', 'session_start', acme);
      const b = publish('tenant-b', 'session_start', otherCustomer);
      await waitFor(() => mine.events().some((e) => e.id === a.id) && theirs.events().some((e) => e.id === b.id), 3000, 'delivery');
      await waitFor(() => theirs.frames().filter((f) => f.startsWith(':')).length >= 2, 3000, 'keep-alives');
      assert.ok(!mine.events().some((e) => e.session_id === 'tenant-b'));
      assert.deepEqual(theirs.events(), [b], 'globex sees its own event only, even in the replay of the whole history');
      const sneaky = await openRaw(url('?session_id=tenant-a'), { ...auth(other), 'last-event-id': '0' });
      await waitFor(() => sneaky.frames().some((f) => f.startsWith(':')), 3000, 'keep-alive');
      assert.deepEqual(sneaky.events(), [], 'a filter on a foreign session id finds nothing');
      sneaky.close();
    } finally {
      mine.close();
      theirs.close();
    }
  });
});

describe('reconnection and load', () => {
  test('the eventsource client resumes after forced drops with no gap and no duplicate while events keep coming', async () => {
    const fast = await listen({ sse: { retryMs: 50, keepAliveMs: 1000 } });
    const customerId = fast.services.sqlite!.store.findToken(fast.owner)!.customer_id;
    const es = eventSource(`${fast.baseUrl}/sessions/events`, fast.owner);
    const received: number[] = [];
    let opens = 0;
    es.onmessage = (m) => received.push(Number(m.lastEventId));
    es.onopen = () => {
      opens++;
    };
    const TOTAL = 2000;
    const published: number[] = [];
    try {
      await waitFor(() => opens === 1, 5000, 'open');
      let drops = 0;
      for (let burst = 0; burst < 40; burst++) {
        for (let i = 0; i < TOTAL / 40; i++) {
          published.push(fast.services.sqlite!.bus.publish({ customerId, sessionId: `load-${i % 7}`, type: 'session_stats', duration: burst, uploaded_bytes: i, downloaded_bytes: i }).id);
        }
        if (burst % 8 === 4) {
          await waitFor(() => fast.services.streams.size === 1, 5000, 'the client to be connected');
          fast.services.streams.closeAll(); // the server drops the stream mid-publication
          drops++;
        }
        await new Promise((r) => setTimeout(r, burst % 3 === 0 ? 15 : 1));
      }
      await waitFor(() => received.length >= TOTAL || received.at(-1) === published.at(-1), 15_000, 'every event');
      assert.equal(drops, 5);
      assert.ok(opens >= drops + 1, `the client reconnected (${opens} opens)`);
      for (let i = 1; i < received.length; i++) assert.ok(received[i] > received[i - 1], `strictly increasing at ${i}: ${received[i - 1]} then ${received[i]}`);
      assert.equal(received.length, TOTAL, 'no gap, no duplicate');
      assert.deepEqual(received, published);
    } finally {
      es.close();
      await fast.stop();
    }
  });

  test('a raw client resuming by Last-Event-ID mid-publication sees a complete sequence', async () => {
    const first = await openRaw(url('?session_id=resume-raw'), auth(srv.owner));
    const published: number[] = [];
    for (let i = 0; i < 300; i++) published.push(publish('resume-raw', 'session_heartbeat', acme, i).id);
    await waitFor(() => first.events().length >= 100, 3000, '100 events');
    first.close();
    const seen = first.events().map((e) => e.id);
    const lastSeen = seen[seen.length - 1];
    const second = await openRaw(url('?session_id=resume-raw'), { ...auth(srv.owner), 'last-event-id': String(lastSeen) });
    for (let i = 300; i < 600; i++) published.push(publish('resume-raw', 'session_heartbeat', acme, i).id);
    await waitFor(() => second.events().at(-1)?.id === published.at(-1), 5000, 'the rest');
    second.close();
    const all = [...seen, ...second.events().map((e) => e.id)];
    assert.deepEqual(all, published);
  });

  test('a slow consumer is disconnected past the buffer bound, memory stays flat, and it resumes with everything', async () => {
    const slow = await listen({ sse: { maxBufferedBytes: 64 * 1024, keepAliveMs: 60_000 } });
    const customerId = slow.services.sqlite!.store.findToken(slow.owner)!.customer_id;
    const url = new URL(slow.baseUrl);
    const sock = connect({ host: url.hostname, port: Number(url.port) });
    try {
      await new Promise<void>((r, j) => {
        sock.once('connect', r);
        sock.once('error', j);
      });
      sock.pause(); // never read
      let received = '';
      sock.on('data', (c: Buffer) => {
        received += c.toString('utf8');
      });
      sock.on('error', () => {});
      const closed = new Promise<void>((r) => sock.once('close', () => r()));
      sock.write(`GET /v2/sessions/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${slow.owner}\r\nAccept: text/event-stream\r\n\r\n`);
      await waitFor(() => slow.services.streams.size === 1, 3000, 'the stream to open');
      global.gc?.();
      const heapBefore = process.memoryUsage().heapUsed;
      const published: number[] = [];
      const pad = 'x'.repeat(200);
      // Publish until the server gives up on the consumer (bounded: at most ~40 MB of events).
      for (let batch = 0; batch < 200 && slow.services.streams.size > 0; batch++) {
        for (let i = 0; i < 1000; i++) {
          published.push(slow.services.sqlite!.bus.publish({ customerId, sessionId: `${pad}-${i % 5}`, type: 'session_stats', duration: batch, uploaded_bytes: i, downloaded_bytes: i }).id);
        }
        await new Promise((r) => setImmediate(r));
      }
      assert.equal(slow.services.streams.size, 0, 'the slow consumer was disconnected');
      assert.equal(slow.services.sqlite!.bus.subscriberCount, 0, 'and unsubscribed');
      const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
      assert.ok(heapGrowth < 64 * 1024 * 1024, `heap grew by ${(heapGrowth / 1048576).toFixed(1)} MiB`);
      // Drain what reached this side, then resume from the last complete event.
      sock.resume();
      await Promise.race([closed, new Promise((r) => setTimeout(r, 3000))]);
      const got = [...received.matchAll(/^id: (\d+)\ndata: .*\n\n/gm)].map((m) => Number(m[1]));
      for (let i = 1; i < got.length; i++) assert.equal(got[i], got[i - 1] + 1);
      assert.ok(got.length < published.length, 'it was cut before the end');
      const lastId = got.at(-1) ?? published[0] - 1;
      const resumed = await openRaw(`${slow.baseUrl}/sessions/events`, { ...auth(slow.owner), 'last-event-id': String(lastId) });
      await waitFor(() => resumed.lastId() === published.at(-1), 20_000, 'the resumed stream to catch up');
      resumed.close();
      const all = [...got, ...resumed.events().map((e) => e.id)];
      assert.equal(all.length, published.length);
      assert.deepEqual(all, published);
    } finally {
      sock.destroy();
      await slow.stop();
    }
  });

  test('a replay far larger than the buffer bound is delivered whole while new events keep arriving', async () => {
    const big = await listen({ sse: { maxBufferedBytes: 64 * 1024, keepAliveMs: 60_000, replayBatch: 200 } });
    const customerId = big.services.sqlite!.store.findToken(big.owner)!.customer_id;
    const pub = (i: number) =>
      big.services.sqlite!.bus.publish({ customerId, sessionId: `history-${'y'.repeat(150)}`, type: 'session_heartbeat', duration: i, uploaded_bytes: i, downloaded_bytes: i }).id;
    const published: number[] = [];
    for (let i = 0; i < 3000; i++) published.push(pub(i));
    const st = await openRaw(`${big.baseUrl}/sessions/events`, { ...auth(big.owner), 'last-event-id': '0' });
    try {
      for (let burst = 0; burst < 20; burst++) {
        for (let i = 0; i < 25; i++) published.push(pub(3000 + burst * 25 + i));
        await new Promise((r) => setTimeout(r, 2));
      }
      await waitFor(() => st.lastId() === published.at(-1), 15_000, 'the replay and the live tail');
      assert.equal(big.services.streams.size, 1, 'never cut as a slow consumer');
      assert.deepEqual(st.events().map((e) => e.id), published);
    } finally {
      st.close();
      await big.stop();
    }
  });

  test('closing the server ends every open stream', async () => {
    const tmp = await listen({ sse: { keepAliveMs: 60_000 } });
    const streams = await Promise.all([1, 2, 3].map(() => openRaw(`${tmp.baseUrl}/sessions/events`, auth(tmp.owner))));
    await waitFor(() => tmp.services.streams.size === 3, 3000, 'three streams');
    await tmp.stop();
    await Promise.all(streams.map((s) => s.ended));
    assert.equal(tmp.services.streams.size, 0);
  });
});
