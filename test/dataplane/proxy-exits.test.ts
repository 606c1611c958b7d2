// The geo proxy with real curl: each grammar error's code, every error answer's status,
// Proxy-Status and X-Proxy-Error, 412 naming the cities, upstream failures (502/504) not counted;
// and exits: a data plane with two source addresses (127.0.0.1, 127.0.0.2) rotates new
// connections over them, a sticky session (`-sessid-`) keeps its address, per customer, over
// HTTP and SOCKS5 alike (SOCKS5 UDP too). The
// destination is a loopback HTTP server answering with the source address it saw.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { startHarness, type Harness } from './helpers/harness.ts';
import { curl } from './helpers/v2ray.ts';
import { createSocket } from 'node:dgram';
import { closed, open, socksAuth, socksRequest, udpClient } from './helpers/socks5-client.ts';

let h: Harness;
let web: Server;
let webPort = 0;

before(async () => {
  h = await startHarness({
    egressAddresses: ['127.0.0.1', '127.0.0.2'],
    maxConnectionsPerSession: 2,
    connectTimeoutMs: 1500,
    dnsTimeoutMs: 300,
    // names: `slow.test` never resolves (the DNS time-out), anything else is not found
    dnsLookup: (name) => (name === 'slow.test' ? new Promise(() => {}) : Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' }))),
  });
  web = createServer((req, res) => {
    if (req.url === '/hold') return void setTimeout(() => res.end(req.socket.remoteAddress ?? ''), 1500);
    res.setHeader('content-type', 'text/plain');
    res.end(req.socket.remoteAddress ?? '');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
  webPort = (web.address() as { port: number }).port;
});
after(async () => {
  await h?.close();
  await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
});

interface Answer { status: number; headers: Map<string, string>; body: string; stderr: string }

/** One request through the proxy with curl; the answer's (last) head and body. */
async function ask(user: string, pass: string, opts: { url?: string; connect?: boolean } = {}): Promise<Answer> {
  const args = ['-D', '-', '-x', `http://127.0.0.1:${h.proxyPort}`, '-U', `${user}:${pass}`];
  if (opts.connect) args.push('-p', '-v');
  const r = await curl([...args, opts.url ?? `http://127.0.0.1:${webPort}/where`], 10);
  const text = r.body.toString('utf8');
  // with -p -v, the CONNECT answer's head is in stderr ("< " lines)
  const headText = opts.connect ? r.stderr.split('\n').filter((l) => l.startsWith('< ')).map((l) => l.slice(2).trimEnd()).join('\r\n') : text;
  const heads = headText.split('\r\n\r\n');
  const head = opts.connect ? headText : heads.filter((x) => x.startsWith('HTTP/')).at(-1) ?? '';
  const headers = new Map<string, string>();
  for (const line of head.split('\r\n').slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers.set(line.slice(0, i).toLowerCase(), line.slice(i + 1).trim());
  }
  const body = opts.connect ? text.split('\r\n\r\n').at(-1) ?? '' : text.slice(text.lastIndexOf('\r\n\r\n') + 4);
  return { status: Number(/^HTTP\/1\.1 (\d{3})/m.exec(head)?.[1] ?? 0), headers, body, stderr: r.stderr };
}

/** The answer is the proxy's own error: status, X-Proxy-Error, Proxy-Status and the JSON record agree. */
function assertError(a: Answer, status: number, code: string, proxyError: string): Record<string, unknown> {
  assert.equal(a.status, status, `${code}: ${a.body}`);
  assert.equal(a.headers.get('x-proxy-error'), code);
  assert.match(a.headers.get('proxy-status') ?? '', new RegExp(`^vpn-access; error=${proxyError}; details="(?:[^"\\\\]|\\\\.)+"$`));
  const json = JSON.parse(a.body) as { error: { code: string; message: string; details: Record<string, unknown> } };
  assert.equal(json.error.code, code);
  assert.ok(json.error.message);
  return json.error.details;
}

test('each malformed user name answers 400 with its own code (after the credential is checked)', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'grammar' });
  const cases: [string, string][] = [
    [`${id}-town-x`, 'proxy_unknown_param'],
    [`${id}-cc-US-cc-DE`, 'proxy_duplicate_param'],
    [`${id}-cc-us`, 'proxy_bad_param'],
    [`${id}-sessid-${'a'.repeat(33)}`, 'proxy_bad_param'],
    [`${id}-sessid-a-sesstime-1441`, 'proxy_bad_param'],
    [`${id}-city-frankfurt`, 'proxy_city_without_country'],
  ];
  for (const [user, code] of cases) assertError(await ask(user, id), 400, code, 'http_request_error');
  // a bad credential is 407 whatever its grammar
  const bad = await ask('00000000-0000-4000-8000-000000000000-town-x', id);
  assertError(bad, 407, 'proxy_auth_required', 'http_request_denied');
  assert.equal(bad.headers.get('proxy-authenticate'), 'Basic realm="vpn-access"');
  assertError(await ask(id, 'wrong'), 407, 'proxy_auth_required', 'http_request_denied');
  // CONNECT gets the same answers (curl shows the head)
  const c = await ask(`${id}-cc-DE-cc-DE`, id, { connect: true });
  assert.equal(c.status, 400);
  assert.equal(c.headers.get('x-proxy-error'), 'proxy_duplicate_param');
  assert.equal(h.mem.sessions.get(id)!.connections, 0, 'none of this opened a connection');
});

test('412 names the cities available in the country; a city with "-" is written with "~"', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'geo' });
  const a = await ask(`${id}-cc-US-city-boston`, id);
  const details = assertError(a, 412, 'location_unavailable', 'destination_unavailable');
  assert.deepEqual(details.available_cities, ['new.york', 'newark']);
  assert.match(a.headers.get('proxy-status')!, /details="city boston is not available in US; available: new.york, newark"/);
  assertError(await ask(`${id}-cc-FR`, id), 412, 'location_unavailable', 'destination_unavailable');
  assert.equal((await ask(`${id}-cc-US-city-new.york`, id)).status, 200);
});

test('without a session key new connections rotate over both source addresses; a key holds one, per customer', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'rot' });
  const seen = new Set<string>();
  for (let i = 0; i < 4; i++) {
    const a = await ask(`${id}-cc-DE`, id);
    assert.equal(a.status, 200);
    seen.add(a.body);
  }
  assert.deepEqual([...seen].sort(), ['127.0.0.1', '127.0.0.2'], 'round-robin over 127.0.0.1 and 127.0.0.2');
  // sticky: every connection of a key leaves from one address (keys of both addresses appear)
  for (const key of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6']) {
    const got = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const a = await ask(`${id}-cc-DE-sessid-${key}`, id, { connect: i === 1 });
      assert.equal(a.status, 200, a.stderr);
      assert.equal(a.headers.get('x-proxy-session-moved'), undefined);
      got.add(a.body);
    }
    assert.equal(got.size, 1, `session ${key} held its exit: ${[...got]}`);
  }
  // another customer's "a1" is its own
  const other = h.mem.createSession({ reusable: true, customer: 'cust-2', client: 'rot2' });
  assert.equal((await ask(`${other}-cc-DE-sessid-a1`, other)).status, 200);
});

test('SOCKS5 CONNECT takes the same exits: rotation without a key, a sessid holds its source address (shared with HTTP); a malformed name is 0x02 after a valid credential', async () => {
  const id = h.mem.createSession({ reusable: true, client: 's5-exits' });
  const viaSocks = async (user: string) => {
    const r = await curl(['--socks5', `127.0.0.1:${h.proxyPort}`, '--proxy-user', `${user}:${id}`, `http://127.0.0.1:${webPort}/where`], 10);
    assert.equal(r.code, 0, r.stderr);
    return r.body.toString('utf8');
  };
  const seen = new Set<string>();
  for (let i = 0; i < 4; i++) seen.add(await viaSocks(`${id}-cc-DE`));
  assert.deepEqual([...seen].sort(), ['127.0.0.1', '127.0.0.2'], 'round-robin over 127.0.0.1 and 127.0.0.2');
  for (const key of ['s1', 's2', 's3', 's4']) {
    const first = await viaSocks(`${id}-cc-DE-sessid-${key}-sesstime-5`);
    assert.ok(first === '127.0.0.1' || first === '127.0.0.2', first);
    for (const n of ['second', 'third']) assert.equal(await viaSocks(`${id}-cc-DE-sessid-${key}-sesstime-5`), first, `session ${key} held ${first} over its ${n} SOCKS5 connection`);
  }
  // the key is the customer's, whatever the protocol: HTTP then SOCKS5 leave from one address
  const http = await ask(`${id}-cc-DE-sessid-mixed`, id);
  assert.equal(http.status, 200);
  assert.equal(await viaSocks(`${id}-cc-DE-sessid-mixed`), http.body);
  // a malformed name: authenticated (the credential is valid), refused at the request with 0x02
  const bad = await socksRequest(h.proxyPort, `${id}-sessid-a-town-x`, id, 1, '127.0.0.1', webPort);
  assert.equal(bad.reply.rep, 0x02);
  await closed(bad.s);
  // a bad credential fails authentication whatever its grammar
  const s = await open(h.proxyPort);
  assert.deepEqual(await socksAuth(s, '00000000-0000-4000-8000-000000000000-town-x', id), { ok: false, status: 1 });
  await closed(s);
});

test('SOCKS5 UDP ASSOCIATE leaves from its exit\'s source address: in turn without a key, the same one for a sessid', async () => {
  // a UDP target answering with the source address it saw
  const where = createSocket('udp4');
  where.on('message', (_m, r) => where.send(Buffer.from(r.address), r.port, r.address));
  await new Promise<void>((r) => where.bind(0, '127.0.0.1', () => r()));
  const wherePort = where.address().port;
  const id = h.mem.createSession({ reusable: true, client: 's5-udp-exits' });
  const source = async (user: string) => {
    const a = await socksRequest(h.proxyPort, user, id, 3, '0.0.0.0', 0);
    assert.equal(a.reply.rep, 0);
    const c = await udpClient(a.reply.host, a.reply.port);
    c.send('127.0.0.1', wherePort, Buffer.from('?'));
    const got = (await c.next())?.payload.toString();
    c.close();
    a.s.destroy();
    await closed(a.s);
    return got;
  };
  try {
    const seen = new Set<string | undefined>();
    for (let i = 0; i < 4; i++) seen.add(await source(`${id}-cc-DE`));
    assert.deepEqual([...seen].sort(), ['127.0.0.1', '127.0.0.2']);
    for (const key of ['u1', 'u2', 'u3']) {
      const first = await source(`${id}-cc-DE-sessid-${key}`);
      assert.ok(first === '127.0.0.1' || first === '127.0.0.2', first);
      for (let i = 0; i < 2; i++) assert.equal(await source(`${id}-cc-DE-sessid-${key}`), first, `session ${key} held ${first}`);
    }
  } finally {
    where.close();
  }
});

test('refusals: paused, expired and over cap 403; connection cap and max_sessions 429 — each with its code', async () => {
  const paused = h.mem.createSession({ reusable: true, client: 'r-paused' });
  h.mem.sessions.get(paused)!.paused = true;
  assertError(await ask(paused, paused), 403, 'session_paused', 'http_request_denied');
  const expired = h.mem.createSession({ reusable: true, client: 'r-exp', expiresAt: new Date(Date.now() - 1000).toISOString() });
  assertError(await ask(expired, expired), 403, 'session_expired', 'http_request_denied');
  const capped = h.mem.createSession({ reusable: true, customer: 'cust-cap', client: 'r-cap' });
  h.mem.sessions.get(capped)!.downloaded_bytes = 10_000;
  h.mem.setLimits('cust-cap', 'session', { downloaded_bytes: 100 });
  assertError(await ask(capped, capped), 403, 'over_cap', 'http_request_denied');
  // the connection cap (2 per session here): two held open, the third refused
  const busy = h.mem.createSession({ reusable: true, client: 'r-busy' });
  const held = [ask(busy, busy, { url: `http://127.0.0.1:${webPort}/hold` }), ask(busy, busy, { url: `http://127.0.0.1:${webPort}/hold` })];
  await new Promise((r) => setTimeout(r, 500));
  assertError(await ask(busy, busy), 429, 'connection_limit', 'connection_limit_reached');
  for (const a of await Promise.all(held)) assert.equal(a.status, 200);
  // max_sessions 1 for the client: while one session has a connection open, another is refused
  h.mem.setLimits('cust-ms', 'client', { max_sessions: 1 });
  const first = h.mem.createSession({ reusable: true, customer: 'cust-ms', client: 'r-ms' });
  const second = h.mem.createSession({ reusable: true, customer: 'cust-ms', client: 'r-ms' });
  const open = ask(first, first, { url: `http://127.0.0.1:${webPort}/hold` });
  await new Promise((r) => setTimeout(r, 500));
  assertError(await ask(second, second), 429, 'max_sessions', 'http_request_denied');
  assert.equal((await open).status, 200);
});

test('upstream failures: 502 refused or not found, 504 on a time-out; the session counts none of it', async () => {
  const id = h.mem.createSession({ reusable: true, client: 'up' });
  const closed = await new Promise<number>((resolve) => {
    const s = createTcpServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  assertError(await ask(id, id, { url: `http://127.0.0.1:${closed}/` }), 502, 'bad_gateway', 'connection_refused');
  assertError(await ask(id, id, { url: 'http://nowhere.test/' }), 502, 'bad_gateway', 'destination_not_found');
  assertError(await ask(id, id, { url: 'http://slow.test/' }), 504, 'gateway_timeout', 'dns_timeout');
  const c = await ask(id, id, { url: `https://127.0.0.1:${closed}/`, connect: true });
  assert.equal(c.status, 502);
  assert.equal(c.headers.get('x-proxy-error'), 'bad_gateway');
  await new Promise((r) => setTimeout(r, 700));
  const row = h.mem.sessions.get(id)!;
  assert.equal(row.downloaded_bytes, 0, 'the error answers are not the customer\'s bytes');
  assert.equal(row.uploaded_bytes, 0);
});

test('the egress policy refusing a destination: 403 destination_forbidden', async () => {
  const strictPlane = await startHarness({ egress: 'public-only' });
  try {
    const id = strictPlane.mem.createSession({ reusable: true, client: 'eg' });
    const r = await curl(['-D', '-', '-x', `http://127.0.0.1:${strictPlane.proxyPort}`, '-U', `${id}:${id}`, `http://127.0.0.1:${webPort}/`], 10);
    const text = r.body.toString('utf8');
    assert.match(text, /^HTTP\/1\.1 403 /);
    assert.match(text, /X-Proxy-Error: destination_forbidden\r\n/);
    assert.match(text, /Proxy-Status: vpn-access; error=destination_ip_prohibited; details="/);
  } finally {
    await strictPlane.close();
  }
});
