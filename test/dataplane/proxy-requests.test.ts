// Every request on a client's connection to the HTTP proxy reaches its own destination, and no
// credential or hop-by-hop header leaves the proxy. The proxy answers every plain-http request
// with `Connection: close` and relays one request per client connection (see proxy.ts), so
// a well-behaved client opens a new connection for its next request; bytes a client sends after
// the first request are dropped, never forwarded. The targets here are hostile: they answer
// keep-alive whatever they are asked and record everything they receive.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import fc from 'fast-check';
import { startHarness, type Harness } from './helpers/harness.ts';
import { curl } from './helpers/v2ray.ts';

interface Received { method: string; target: string; headers: [string, string][]; body: string; raw: string }
interface Target { name: string; port: number; requests: Received[]; conns: Set<Socket>; closed: Promise<void>[]; close(): Promise<void> }

/** A keep-alive HTTP server that ignores `Connection: close` and records every request. */
async function hostileTarget(name: string): Promise<Target> {
  const requests: Received[] = [];
  const conns = new Set<Socket>();
  const closed: Promise<void>[] = [];
  const server: Server = createServer((s) => {
    conns.add(s);
    closed.push(new Promise((r) => s.once('close', () => { conns.delete(s); r(); })));
    s.on('error', () => {});
    let buf = '';
    s.setEncoding('latin1');
    s.on('data', (chunk: string) => {
      buf += chunk;
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = buf.slice(0, end).split('\r\n');
        const [method, target] = lines[0].split(' ');
        const headers = lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string]);
        const cl = headers.find(([k]) => k === 'content-length');
        const chunked = headers.some(([k, v]) => k === 'transfer-encoding' && /chunked/i.test(v));
        let bodyEnd: number;
        if (chunked) {
          const t = buf.indexOf('\r\n0\r\n\r\n', end + 2);
          const t0 = buf.startsWith('0\r\n\r\n', end + 4) ? end + 4 : -1;
          if (t0 >= 0) bodyEnd = t0 + 5;
          else if (t >= 0) bodyEnd = t + 7;
          else return;
        } else bodyEnd = end + 4 + (cl ? Number(cl[1]) : 0);
        if (buf.length < bodyEnd) return;
        const body = buf.slice(end + 4, bodyEnd);
        requests.push({ method, target, headers, body, raw: buf.slice(0, bodyEnd) });
        buf = buf.slice(bodyEnd);
        const answer = `${name}:${target}:${body.length}`;
        s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${answer.length}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\nProxy-Authenticate: Basic realm="${name}"\r\n\r\n${answer}`);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    name,
    port: (server.address() as { port: number }).port,
    requests,
    conns,
    closed,
    close: () => new Promise<void>((r) => { for (const c of conns) c.destroy(); server.close(() => r()); }),
  };
}

const HOP = ['proxy-authorization', 'proxy-authenticate', 'proxy-connection', 'keep-alive', 'te', 'upgrade', 'x-hop'];

let h: Harness;
let a: Target;
let b: Target;
let id: string;

before(async () => {
  h = await startHarness();
  a = await hostileTarget('a');
  b = await hostileTarget('b');
  id = h.mem.createSession({ reusable: true, client: 'multi' });
});
after(async () => {
  await h?.close();
  await a?.close();
  await b?.close();
});

function assertClean(r: Received, t: Target): void {
  for (const [k] of r.headers) assert.ok(!HOP.includes(k), `${k} must not leave the proxy: ${JSON.stringify(r.raw)}`);
  assert.deepEqual(r.headers.filter(([k]) => k === 'connection'), [['connection', 'close']]);
  assert.deepEqual(r.headers.filter(([k]) => k === 'host'), [['host', `127.0.0.1:${t.port}`]]);
  assert.ok(!r.raw.includes(id), 'the session id (the proxy credential) never reaches a destination');
}

test('curl -x proxy http://a/first http://b/second: each request reaches its own destination, without credentials', async () => {
  const [na, nb] = [a.requests.length, b.requests.length];
  const r = await curl(['-D', '-', '-x', `http://${id}:${id}@127.0.0.1:${h.proxyPort}`, `http://127.0.0.1:${a.port}/first`, `http://127.0.0.1:${b.port}/second`], 10);
  assert.equal(r.code, 0, r.stderr);
  const text = r.body.toString('latin1');
  assert.match(text, /a:\/first:0/);
  assert.match(text, /b:\/second:0/);
  // Both answers were announced as the connection's last, and the target's hop-by-hop headers were dropped.
  assert.equal(text.match(/^Connection: close\r$/gim)?.length, 2, text);
  assert.doesNotMatch(text, /keep-alive|proxy-authenticate/i);
  assert.deepEqual(a.requests.slice(na).map((q) => `${q.method} ${q.target}`), ['GET /first']);
  assert.deepEqual(b.requests.slice(nb).map((q) => `${q.method} ${q.target}`), ['GET /second']);
  assertClean(a.requests[na], a);
  assertClean(b.requests[nb], b);
});

interface Req { to: 'a' | 'b'; method: 'GET' | 'POST' | 'PUT'; path: string; body: string; chunked: boolean; noise: string[] }

const reqArb: fc.Arbitrary<Req> = fc.record({
  to: fc.constantFrom('a' as const, 'b' as const),
  method: fc.constantFrom('GET' as const, 'POST' as const, 'PUT' as const),
  path: fc.stringMatching(/^\/[a-z0-9]{0,12}$/),
  body: fc.stringMatching(/^[A-Za-z0-9]{0,300}$/),
  chunked: fc.boolean(),
    // X-Hop is named by the Connection header, so it is hop-by-hop too; X-End is end-to-end.
  noise: fc.subarray(['Connection: keep-alive, X-Hop\r\nX-Hop: 1', 'Keep-Alive: timeout=5', 'Proxy-Connection: keep-alive', 'TE: trailers', 'Upgrade: websocket', 'X-End: 1', 'Host: evil.example']),
});

function encode(q: Req, port: number): string {
  const auth = Buffer.from(`${id}:${id}`).toString('base64');
  const lines = [`${q.method} http://127.0.0.1:${port}${q.path} HTTP/1.1`, `Proxy-Authorization: Basic ${auth}`, ...q.noise];
  let body = q.body;
  if (q.chunked) {
    lines.push('Transfer-Encoding: chunked');
    const parts: string[] = [];
    for (let i = 0; i < q.body.length; i += 37) {
      const p = q.body.slice(i, i + 37);
      parts.push(`${p.length.toString(16)}\r\n${p}\r\n`);
    }
    body = `${parts.join('')}0\r\n\r\n`;
  } else if (q.body.length > 0 || q.method !== 'GET') lines.push(`Content-Length: ${q.body.length}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** Writes `bytes` in the given cut points, reads one response (Content-Length framed), then closes. */
function exchange(bytes: Buffer, cuts: number[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(h.proxyPort, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`no complete answer: ${JSON.stringify(got)}`)); }, 5000);
    s.setEncoding('latin1');
    s.on('error', () => {});
    s.on('data', (c: string) => {
      got += c;
      const end = got.indexOf('\r\n\r\n');
      const len = /\r\ncontent-length: (\d+)/i.exec(got.slice(0, end))?.[1];
      if (end >= 0 && len !== undefined && got.length >= end + 4 + Number(len)) {
        clearTimeout(timer);
        s.destroy();
        resolve(got);
      }
    });
    s.on('close', () => { clearTimeout(timer); resolve(got); });
    const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
    let from = 0;
    const next = (i: number) => {
      if (s.destroyed) return;
      const to = i < points.length ? points[i] : bytes.length;
      s.write(bytes.subarray(from, to));
      from = to;
      if (to < bytes.length) setImmediate(() => next(i + 1));
    };
    s.once('connect', () => next(0));
  });
}

test('property: of the requests on one connection only the first is relayed, to its own destination, cleanly', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(reqArb, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 6 }), async (reqs, cuts) => {
      const targets = { a, b };
      const before = { a: a.requests.length, b: b.requests.length };
      const conns = { a: a.closed.length, b: b.closed.length };
      const bytes = Buffer.from(reqs.map((q) => encode(q, targets[q.to].port)).join(''), 'latin1');
      const answer = await exchange(bytes, cuts);
      const first = reqs[0];
      const t = targets[first.to];
      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
      const head = answer.slice(0, answer.indexOf('\r\n\r\n'));
      assert.match(head, /\r\nConnection: close(\r\n|$)/);
      assert.doesNotMatch(head, /keep-alive|proxy-authenticate/i);
      assert.ok(answer.endsWith(`${first.to}:${first.path}:${first.chunked ? encode(first, t.port).split('\r\n\r\n').slice(1).join('\r\n\r\n').length : first.body.length}`), answer);
      // Everything the proxy sent has arrived once the destination's connection is closed.
      await Promise.race([Promise.all([...a.closed.slice(conns.a), ...b.closed.slice(conns.b)]), new Promise((r) => setTimeout(r, 3000))]);
      const other = first.to === 'a' ? 'b' : 'a';
      assert.equal(targets[other].requests.length, before[other], 'the other destination received nothing');
      const got = t.requests.slice(before[first.to]);
      assert.equal(got.length, 1, `exactly one request reached ${first.to}: ${JSON.stringify(got.map((g) => g.raw))}`);
      assert.equal(`${got[0].method} ${got[0].target}`, `${first.method} ${first.path}`);
      assertClean(got[0], t);
      assert.equal(got[0].headers.some(([k]) => k === 'x-end'), first.noise.includes('X-End: 1'), 'end-to-end headers are kept');
      const sentBody = encode(first, t.port).split('\r\n\r\n').slice(1).join('\r\n\r\n');
      assert.equal(got[0].body, sentBody, 'the body is relayed as sent');
    }),
    { numRuns: 60 },
  );
});

test('ambiguous body framing is refused with 400 and never relayed (no request smuggling)', async () => {
  const [na, nb] = [a.requests.length, b.requests.length];
  const auth = Buffer.from(`${id}:${id}`).toString('base64');
  for (const framing of ['Content-Length: 5\r\nTransfer-Encoding: chunked', 'Transfer-Encoding: chunked, gzip', 'Content-Length: 5\r\nContent-Length: 6', 'Content-Length: -1', 'X-A: 1\nContent-Length: 0']) {
    const raw = `POST http://127.0.0.1:${a.port}/x HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\n${framing}\r\n\r\n0\r\n\r\nGET http://127.0.0.1:${b.port}/y HTTP/1.1\r\n\r\n`;
    const answer = await exchange(Buffer.from(raw, 'latin1'), []);
    assert.match(answer, /^HTTP\/1\.1 400 [\s\S]*"code":"invalid_request"/, framing);
  }
  assert.equal(a.requests.length, na);
  assert.equal(b.requests.length, nb);
});
