// /v2/subscriptions/{client_id} (PUT on or rotate, GET, DELETE) and the public GET /sub/<secret>
// feed: lifecycle, rotation and revocation, tenancy, validation, which sessions a feed lists,
// the headers clients read, the User-Agent table over HTTP, 404 and the per-address limiter,
// the public origin in URLs, the secret kept out of logs and out of the database, and restarts.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { createLogger } from '../../server/log.ts';
import { assertError, assertRateHeaders, auth, createSession, ISO_MS_Z, json, listen, makeServer, type TestListening, type TestServer } from '../helpers/server.ts';
import { parseVlessLink } from '../helpers/vless-link.ts';

const put = (s: TestServer, client: string, token = s.owner, payload?: string) =>
  s.app.inject({ method: 'PUT', url: `/v2/subscriptions/${encodeURIComponent(client)}`, headers: { ...auth(token), ...(payload ? { 'content-type': 'application/json' } : {}) }, payload });
const get = (s: TestServer, client: string, token = s.owner) => s.app.inject({ url: `/v2/subscriptions/${encodeURIComponent(client)}`, headers: auth(token) });
const del = (s: TestServer, client: string, token = s.owner) => s.app.inject({ method: 'DELETE', url: `/v2/subscriptions/${encodeURIComponent(client)}`, headers: auth(token) });
const feed = (s: TestServer, url: string, headers: Record<string, string> = {}, remoteAddress = '127.0.0.1') => {
  const u = new URL(url);
  return s.app.inject({ url: u.pathname + u.search, headers, remoteAddress });
};
const secretOf = (url: string) => new URL(url).pathname.split('/').pop()!;

describe('the subscription record', () => {
  let s: TestServer;
  before(async () => {
    s = await makeServer();
  });
  after(() => s.close());

  test('off until turned on: GET and DELETE answer 404 subscription_not_found', async () => {
    const e = assertError(await get(s, 'alice'), 404, 'subscription_not_found');
    assert.equal(e.details.client_id, 'alice');
    assertError(await del(s, 'alice'), 404, 'subscription_not_found');
  });

  test('PUT turns it on (200, the record); GET shows the same URL again; both owner and agent tokens', async () => {
    const on = await put(s, 'alice');
    assert.equal(on.statusCode, 200, on.body);
    assertRateHeaders(on);
    const rec = json(on);
    assert.deepEqual(Object.keys(rec).sort(), ['client_id', 'created_at', 'format_urls', 'rotated_at', 'url']);
    assert.equal(rec.client_id, 'alice');
    assert.match(rec.created_at, ISO_MS_Z);
    assert.equal(rec.rotated_at, null);
    assert.match(rec.url, /^http:\/\/127\.0\.0\.1:8787\/sub\/[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(rec.format_urls, Object.fromEntries(['base64', 'xray', 'sing-box', 'clash'].map((f) => [f, `${rec.url}?format=${f}`])));
    for (const token of [s.owner, s.agent]) {
      const again = await get(s, 'alice', token);
      assert.equal(again.statusCode, 200);
      assert.deepEqual(json(again), rec, 'the same record, URL included, on every GET');
    }
  });

  test('PUT again rotates: a new URL, rotated_at set, the old secret answers 404 at once', async () => {
    const before = json(await get(s, 'alice'));
    assert.equal((await feed(s, before.url)).statusCode, 200);
    const rotated = await put(s, 'alice', s.agent);
    assert.equal(rotated.statusCode, 200);
    const rec = json(rotated);
    assert.notEqual(rec.url, before.url);
    assert.equal(rec.created_at, before.created_at);
    assert.match(rec.rotated_at, ISO_MS_Z);
    assertError(await feed(s, before.url), 404, 'subscription_not_found');
    assert.equal((await feed(s, rec.url)).statusCode, 200);
    assert.deepEqual(json(await get(s, 'alice')), rec);
  });

  test('DELETE turns it off (204, no body): the URL answers 404 and GET 404; PUT later issues a new URL', async () => {
    const { url } = json(await get(s, 'alice'));
    const off = await del(s, 'alice');
    assert.equal(off.statusCode, 204);
    assert.equal(off.body, '');
    assertError(await feed(s, url), 404, 'subscription_not_found');
    assertError(await get(s, 'alice'), 404, 'subscription_not_found');
    const back = json(await put(s, 'alice'));
    assert.notEqual(back.url, url);
    assert.equal(back.rotated_at, null, 'a new subscription');
    assertError(await feed(s, url), 404, 'subscription_not_found');
  });

  test('customers are isolated: another customer\'s client answers 404, and its own client of the same name has its own URL', async () => {
    const mine = json(await get(s, 'alice'));
    assertError(await get(s, 'alice', s.other), 404, 'subscription_not_found');
    assertError(await del(s, 'alice', s.other), 404, 'subscription_not_found');
    assert.equal((await get(s, 'alice')).statusCode, 200, 'the other customer\'s DELETE changed nothing');
    await createSession(s.app, s.owner, { client_id: 'alice' });
    const theirs = json(await put(s, 'alice', s.other));
    assert.notEqual(theirs.url, mine.url);
    assert.deepEqual(json(await get(s, 'alice')), mine, 'their PUT did not rotate ours');
    const body = Buffer.from((await feed(s, theirs.url)).body, 'base64').toString('utf8');
    assert.equal(body, '', 'globex\'s alice has no sessions; acme\'s are not listed');
  });

  test('client_id is validated as decided (1 to 128 of A-Z a-z 0-9 . _ : @ -): 400 otherwise', async () => {
    for (const ok of ['a', 'A.b_c:d@e-f', 'x'.repeat(128)]) assert.equal((await put(s, ok)).statusCode, 200, ok);
    for (const bad of ['x'.repeat(129), 'a b', 'a/b', 'é', 'a%b', 'a*b']) {
      const e = assertError(await put(s, bad), 400, 'invalid_request');
      assert.equal(e.details.location, 'params', bad);
      assertError(await get(s, bad), 400, 'invalid_request');
    }
  });

  test('authentication: 401 without or with a bad token; PUT takes no body fields (400), {} is fine', async () => {
    assertError(await s.app.inject({ method: 'PUT', url: '/v2/subscriptions/alice' }), 401, 'unauthorized');
    assertError(await s.app.inject({ url: '/v2/subscriptions/alice', headers: auth('vad_nope') }), 401, 'unauthorized');
    const e = assertError(await put(s, 'alice', s.owner, '{"format":"xray"}'), 400, 'invalid_request');
    assert.deepEqual(e.details.unknown_fields, ['format']);
    assert.equal((await put(s, 'alice', s.owner, '{}')).statusCode, 200);
    assertError(await s.app.inject({ method: 'POST', url: '/v2/subscriptions/alice', headers: auth(s.owner) }), 405, 'method_not_allowed');
  });

  test('the OpenAPI document lists the routes as extensions', async () => {
    const doc = json(await s.app.inject({ url: '/v2/openapi.json' }));
    const ops = doc.paths['/v2/subscriptions/{client_id}'];
    for (const m of ['put', 'get', 'delete']) assert.equal(ops[m]['x-extension'], true, m);
    assert.equal(doc.paths['/sub/{secret}'].get['x-extension'], true);
    assert.equal(ops.get.responses['200'].content['application/json'].schema['x-extension'], true);
  });
});

describe('the feed', () => {
  let s: TestServer;
  let url: string;
  const ids: Record<string, string> = {};
  before(async () => {
    s = await makeServer({ publicHost: 'vpn.example.com', publicPort: 8443 });
    ids.plain = (await createSession(s.app, s.owner, { client_id: 'bob', zone: 'de-fra' })).id;
    ids.reusable = (await createSession(s.app, s.owner, { client_id: 'bob', zone: 'us-nyc', reusable: true })).id;
    ids.paused = (await createSession(s.app, s.owner, { client_id: 'bob', reusable: true })).id;
    ids.ended = (await createSession(s.app, s.owner, { client_id: 'bob' })).id;
    ids.otherClient = (await createSession(s.app, s.owner, { client_id: 'carol' })).id;
    const p = await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${ids.paused}/pause`, headers: auth(s.owner) });
    assert.equal(p.statusCode, 200, p.body);
    s.services.sqlite!.store.saveRuntime(ids.ended, { status: 'ended', uploaded_bytes: 100, downloaded_bytes: 2000 });
    s.services.sqlite!.store.saveRuntime(ids.plain, { uploaded_bytes: 11, downloaded_bytes: 22 });
    s.services.sqlite!.store.saveRuntime(ids.otherClient, { uploaded_bytes: 5000, downloaded_bytes: 5000 });
    url = json(await put(s, 'bob')).url;
  });
  after(() => s.close());

  test('the URL is built from the public origin: public host and port, scheme (https: TLS auto is on for a public name)', () => {
    assert.match(url, /^https:\/\/vpn\.example\.com:8443\/sub\/[A-Za-z0-9_-]{43}$/);
  });

  test('a self-signed server (TLS auto on a public name): links pin it with pcs, sing-box gets its PEM', async () => {
    const tls = s.services.tls;
    assert.equal(tls.certificate?.selfSigned, true);
    const res = await feed(s, `${url}?format=sing-box`);
    assert.equal(res.statusCode, 200);
    const vless = (JSON.parse(res.body) as { outbounds: { type: string; tls?: { certificate?: string[] } }[] }).outbounds.filter((o) => o.type === 'vless');
    assert.ok(vless.length > 0);
    for (const o of vless) assert.equal(o.tls?.certificate?.join('\n'), tls.current!.cert.trim());
    const links = Buffer.from((await feed(s, url)).body, 'base64').toString('utf8').split('\n');
    for (const l of links) assert.equal(new URL(l).searchParams.get('pcs'), tls.certificate!.fingerprint);
  });

  test('base64 (the default): the links of the usable sessions only (not ended, not paused, not another client\'s)', async () => {
    const res = await feed(s, url);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    const links = Buffer.from(res.body, 'base64').toString('utf8').split('\n');
    const listed = links.map((l) => parseVlessLink(l).id).sort();
    assert.deepEqual(listed, [ids.plain, ids.reusable].sort());
    for (const l of links) {
      const p = parseVlessLink(l);
      assert.equal(p.address, 'vpn.example.com');
      assert.equal(p.port, 8443);
      // Names for people: the zone's name and the client.
      assert.equal(p.remark, `${p.id === ids.plain ? 'Frankfurt' : 'New York'} · bob`);
    }
    // Resuming the paused one lists it again.
    await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${ids.paused}/resume`, headers: auth(s.owner) });
    const again = Buffer.from((await feed(s, url)).body, 'base64').toString('utf8').split('\n');
    assert.equal(again.length, 3);
    await s.app.inject({ method: 'PATCH', url: `/v2/sessions/${ids.paused}/pause`, headers: auth(s.owner) });
  });

  test('headers clients read: subscription-userinfo (counters of the client, total from its byte caps), update interval, title, file name', async () => {
    let res = await feed(s, url);
    // Counters: every session of bob (the ended one too), none of carol's.
    assert.equal(res.headers['subscription-userinfo'], 'upload=111; download=2022; total=0');
    assert.equal(res.headers['profile-update-interval'], '12');
    const title = String(res.headers['profile-title']);
    assert.match(title, /^base64:[A-Za-z0-9+/]+=*$/);
    assert.equal(Buffer.from(title.slice(7), 'base64').toString('utf8'), 'VPN Access Desk: bob');
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="vpn-access-bob\.txt"; filename\*=UTF-8''/);
    assert.equal(res.headers['cache-control'], 'no-store');
    const patch = await s.app.inject({
      method: 'PATCH',
      url: '/v2/customer/limits/client',
      headers: { ...auth(s.owner), 'content-type': 'application/json' },
      payload: { downloaded_bytes: 5_000_000, uploaded_bytes: 1_000_000 },
    });
    assert.equal(patch.statusCode, 200);
    res = await feed(s, url);
    assert.equal(res.headers['subscription-userinfo'], 'upload=111; download=2022; total=6000000');
    const fields = Object.fromEntries(String(res.headers['subscription-userinfo']).split('; ').map((kv) => kv.split('=')));
    assert.deepEqual(Object.keys(fields), ['upload', 'download', 'total'], 'no expire: none is set');
    for (const f of ['xray', 'sing-box', 'clash']) {
      const r = await feed(s, `${url}?format=${f}`);
      assert.equal(r.headers['subscription-userinfo'], res.headers['subscription-userinfo'], f);
      assert.match(String(r.headers['content-disposition']), new RegExp(`vpn-access-bob\\.${f === 'clash' ? 'yaml' : 'json'}"`));
    }
  });

  test('?format= picks the format; each one lists the same sessions', async () => {
    const x = await feed(s, `${url}?format=xray`);
    assert.match(String(x.headers['content-type']), /^application\/json/);
    const xo = json(x).outbounds.filter((o: any) => o.protocol === 'vless');
    assert.deepEqual(xo.map((o: any) => o.settings.vnext[0].users[0].id).sort(), [ids.plain, ids.reusable].sort());
    const sb = await feed(s, `${url}?format=sing-box`);
    assert.deepEqual(json(sb).outbounds.filter((o: any) => o.type === 'vless').map((o: any) => o.uuid).sort(), [ids.plain, ids.reusable].sort());
    const cl = await feed(s, `${url}?format=clash`);
    assert.match(String(cl.headers['content-type']), /^text\/yaml/);
    assert.deepEqual(parseYaml(cl.body).proxies.map((p: any) => p.uuid).sort(), [ids.plain, ids.reusable].sort());
    const b = await feed(s, `${url}?format=base64`, { 'user-agent': 'clash.meta' });
    assert.match(String(b.headers['content-type']), /^text\/plain/, '?format= wins over the User-Agent');
    const bad = assertError(await feed(s, `${url}?format=surge`), 400, 'invalid_request');
    assert.equal(bad.details.location, 'querystring');
  });

  test('User-Agent table over HTTP: each known client gets its format without ?format=', async () => {
    const cases: [string, RegExp, (body: string) => void][] = [
      ['v2rayN/7.10.5', /^text\/plain/, (b) => assert.ok(Buffer.from(b, 'base64').toString().startsWith('vless://'))],
      ['v2rayNG/1.9.30', /^text\/plain/, (b) => assert.ok(Buffer.from(b, 'base64').toString().startsWith('vless://'))],
      ['Xray/26.7.11', /^application\/json/, (b) => assert.ok(JSON.parse(b).routing)],
      ['SFA/1.11.9 (Android 14; sing-box 1.11.9)', /^application\/json/, (b) => assert.equal(JSON.parse(b).route.final, 'proxy')],
      ['HiddifyNext/2.5.7', /^application\/json/, (b) => assert.ok(JSON.parse(b).outbounds)],
      ['NekoBox/Android/1.3.9 (Prefer ClashMeta Format)', /^application\/json/, (b) => assert.ok(JSON.parse(b).outbounds)],
      ['karing/1.1.2.606', /^application\/json/, (b) => assert.ok(JSON.parse(b).outbounds)],
      ['mihomo/1.19.1', /^text\/yaml/, (b) => assert.ok(parseYaml(b).proxies.length)],
      ['clash-verge/v2.2.3', /^text\/yaml/, (b) => assert.ok(parseYaml(b).proxies.length)],
      ['Stash/3.0.2 Clash/1.12.0', /^text\/yaml/, (b) => assert.ok(parseYaml(b).proxies.length)],
      ['FlClash/v0.8.80', /^text\/yaml/, (b) => assert.ok(parseYaml(b).proxies.length)],
      ['curl/8.5.0', /^text\/plain/, (b) => assert.ok(Buffer.from(b, 'base64').toString().startsWith('vless://'))],
    ];
    for (const [ua, type, check] of cases) {
      const r = await feed(s, url, { 'user-agent': ua });
      assert.equal(r.statusCode, 200, ua);
      assert.match(String(r.headers['content-type']), type, ua);
      check(r.body);
    }
  });

  test('no Authorization is needed, and a token does not open another client\'s feed', async () => {
    const r = await feed(s, url, { authorization: 'Bearer whatever' });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['x-ratelimit-limit'], undefined, 'outside the /v2 token limiter');
  });
});

describe('unknown secrets: 404, then 429 per address', () => {
  let s: TestServer;
  before(async () => {
    s = await makeServer();
  });
  after(() => s.close());

  test('an unknown, malformed or revoked secret is a 404 error record; past 10 misses the address gets 429 with Retry-After for them, never for a good secret', async () => {
    const good = json(await put(s, 'dave')).url;
    const scanner = '198.51.100.7';
    const unknown = ['A'.repeat(43), 'short', 'x'.repeat(300), secretOf(good).slice(0, 42) + (secretOf(good).endsWith('A') ? 'B' : 'A')];
    let misses = 0;
    for (const secret of unknown) {
      assertError(await s.app.inject({ url: `/sub/${secret}`, remoteAddress: scanner }), 404, 'subscription_not_found');
      misses++;
    }
    while (misses < 9) {
      assertError(await s.app.inject({ url: `/sub/${'Z'.repeat(43)}`, remoteAddress: scanner }), 404, 'subscription_not_found');
      misses++;
    }
    // The tenth miss blocks the address.
    const tenth = assertError(await s.app.inject({ url: `/sub/${'Y'.repeat(43)}`, remoteAddress: scanner }), 429, 'rate_limited');
    assert.equal(tenth.details.limit, 10);
    const blocked = await s.app.inject({ url: `/sub/${'X'.repeat(43)}`, remoteAddress: scanner });
    assertError(blocked, 429, 'rate_limited');
    const retry = Number(blocked.headers['retry-after']);
    assert.ok(retry >= 1 && retry <= 60, String(blocked.headers['retry-after']));
    // A valid secret is checked first: others behind this address (a NAT, a proxy) keep their feed.
    assert.equal((await feed(s, good, {}, scanner)).statusCode, 200);
    // Another address is not affected; the good secret still works there.
    assert.equal((await feed(s, good, {}, '198.51.100.8')).statusCode, 200);
    assertError(await s.app.inject({ url: `/sub/${'Z'.repeat(43)}`, remoteAddress: '198.51.100.8' }), 404, 'subscription_not_found');
    // Good requests never count: many polls from one address stay 200.
    for (let i = 0; i < 30; i++) assert.equal((await feed(s, good, {}, '198.51.100.9')).statusCode, 200);
  });
});

describe('the miss limit over HTTP: the client address, --trust-proxy, IPv6 by /64', () => {
  const miss = (base: string, xff?: string) => fetch(`${base}/sub/${'Q'.repeat(43)}`, { headers: xff ? { 'x-forwarded-for': xff } : {} });
  const status = async (res: Promise<Response>) => {
    const r = await res;
    await r.arrayBuffer();
    return r.status;
  };
  const subscribe = async (s: TestListening, client: string) => {
    const res = await fetch(`${s.origin}/v2/subscriptions/${client}`, { method: 'PUT', headers: auth(s.owner) });
    assert.equal(res.status, 200);
    return `${s.origin}${new URL(((await res.json()) as { url: string }).url).pathname}`;
  };

  test('without --trust-proxy, X-Forwarded-For is ignored (rotating it gains nothing) and the valid secret of a blocked address still works', async () => {
    const s = await listen();
    try {
      const good = await subscribe(s, 'nat');
      const got: number[] = [];
      for (let i = 1; i <= 10; i++) got.push(await status(miss(s.origin, `198.51.100.${i}`)));
      assert.deepEqual(got, [...Array(9).fill(404), 429], 'all counted under the socket peer');
      assert.equal(await status(miss(s.origin)), 429);
      assert.equal(await status(fetch(good)), 200, 'the valid secret is never blocked');
    } finally {
      await s.stop();
    }
  });

  test('with a trusted proxy, the client it names is counted; IPv6 by its /64; an untrusted peer\'s header is ignored', async () => {
    const s = await listen({ trustProxy: ['loopback'] });
    try {
      const good = await subscribe(s, 'proxied');
      for (let i = 0; i < 9; i++) assert.equal(await status(miss(s.origin, '198.51.100.7')), 404);
      assert.equal(await status(miss(s.origin, '198.51.100.7')), 429);
      assert.equal(await status(miss(s.origin, '198.51.100.8')), 404, 'another client behind the same proxy is not blocked');
      assert.equal(await status(fetch(good, { headers: { 'x-forwarded-for': '198.51.100.7' } })), 200);
      // One /64 is one client however many of its addresses it uses.
      for (let i = 1; i <= 9; i++) assert.equal(await status(miss(s.origin, `2001:db8:1:2::${i.toString(16)}`)), 404);
      assert.equal(await status(miss(s.origin, '2001:db8:1:2:ffff:ffff:ffff:fffe')), 429);
      assert.equal(await status(miss(s.origin, '2001:db8:1:3::1')), 404, 'the next /64 is another client');
    } finally {
      await s.stop();
    }
    const other = await listen({ trustProxy: ['203.0.113.9'] });
    try {
      const got: number[] = [];
      for (let i = 1; i <= 10; i++) got.push(await status(miss(other.origin, `198.51.100.${i}`)));
      assert.deepEqual(got, [...Array(9).fill(404), 429], 'loopback is not a trusted proxy here: its header is ignored');
    } finally {
      await other.stop();
    }
  });
});

describe('the secret stays secret', () => {
  test('no log line carries it (request log on), and the database holds only its hash', async () => {
    const lines: string[] = [];
    const s = await makeServer({ logRequests: true, logger: createLogger({ level: 'debug', write: (l) => lines.push(l) }) });
    try {
      await createSession(s.app, s.owner, { client_id: 'erin' });
      const first = json(await put(s, 'erin')).url;
      await feed(s, first);
      await feed(s, `${first}?format=xray`, { 'user-agent': 'Xray/26.7.11' });
      const second = json(await put(s, 'erin')).url;
      await feed(s, first); // revoked: 404
      await feed(s, second);
      await get(s, 'erin');
      await s.app.inject({ url: `/sub/${secretOf(second)}/extra` });
      await s.app.inject({ method: 'POST', url: `/sub/${secretOf(second)}` });
      const log = lines.join('\n');
      assert.ok(lines.some((l) => l.includes('GET /sub/… 200')), log);
      assert.ok(lines.some((l) => l.includes('GET /sub/… 404')), log);
      for (const u of [first, second]) assert.ok(!log.includes(secretOf(u)), `a secret reached the log:\n${log}`);
      for (const u of [first, second]) assert.ok(!log.includes(secretOf(u).slice(0, 12)), 'not even a part of it');
      // At rest: the database files hold neither secret; the key file is 0600.
      const dbBytes = readdirSync(s.dataDir)
        .filter((f) => f.startsWith('vpn-access.db'))
        .map((f) => readFileSync(join(s.dataDir, f)).toString('latin1'))
        .join('');
      for (const u of [first, second]) assert.ok(!dbBytes.includes(secretOf(u)), 'the database never stores a secret');
      assert.equal(statSync(join(s.dataDir, 'subscription.key')).mode & 0o777, 0o600);
    } finally {
      await s.close();
    }
  });

  test('after a restart on the same data folder, GET shows the same URL and it still works', async () => {
    const s1 = await makeServer();
    const dataDir = s1.dataDir;
    const rec = json(await put(s1, 'frank'));
    await s1.app.close();
    const s2 = await makeServer({ dataDir });
    try {
      assert.deepEqual(json(await get(s2, 'frank')), rec);
      assert.equal((await feed(s2, rec.url)).statusCode, 200);
    } finally {
      await s2.close();
    }
  });
});

describe('the feed for people: the period in force, expiry, names, the page a browser gets', () => {
  let s: TestServer;
  let url: string;
  let customerId: string;
  before(async () => {
    s = await makeServer({ publicHost: 'vpn.example.com', publicPort: 8443 });
    const a = await createSession(s.app, s.owner, { client_id: 'dana', zone: 'de-fra', reusable: true });
    const b = await createSession(s.app, s.owner, { client_id: 'dana', zone: 'de-fra', reusable: true });
    customerId = s.services.sqlite!.store.getSession(a.id)!.customer_id;
    s.services.sqlite!.store.saveRuntime(a.id, { uploaded_bytes: 1000, downloaded_bytes: 50_000 });
    s.services.sqlite!.store.saveRuntime(b.id, { uploaded_bytes: 0, downloaded_bytes: 0 });
    url = json(await put(s, 'dana')).url;
  });
  after(() => s.close());

  test('two sessions in one zone get distinct names', async () => {
    const links = Buffer.from((await feed(s, url)).body, 'base64').toString('utf8').split('\n');
    assert.deepEqual(links.map((l) => parseVlessLink(l).remark).sort(), ['Frankfurt · dana', 'Frankfurt · dana 2']);
  });

  test('subscription-userinfo counts the period of a renewing cap, not the lifetime; total is the cap', async () => {
    const patch = await s.app.inject({
      method: 'PATCH',
      url: '/v2/customer/limits/client',
      headers: { ...auth(s.owner), 'content-type': 'application/json' },
      payload: { downloaded_bytes: 200_000_000, reset_period: 'month' },
    });
    assert.equal(patch.statusCode, 200, patch.body);
    const { periodOf } = await import('../../server/contract/period.ts');
    const period = periodOf({ reset_period: 'month' }, Date.now())!;
    // The quota job records each period's base (the lifetime totals when it began).
    await s.services.data.snapshotQuotaBases(customerId, 'client', period.start);
    const store = s.services.sqlite!.store;
    const [first] = store.listSessions(customerId, { client_id: 'dana' }, 10).rows;
    store.saveRuntime(first.id, { uploaded_bytes: first.uploaded_bytes + 7, downloaded_bytes: first.downloaded_bytes + 3000 });
    const res = await feed(s, url);
    assert.equal(res.headers['subscription-userinfo'], 'upload=7; download=3000; total=200000000');
  });

  test('expire is the end of access once every usable session has one', async () => {
    const until = new Date(Date.now() + 3 * 86_400_000);
    const made = await s.app.inject({
      method: 'POST',
      url: '/v2/sessions',
      headers: { ...auth(s.owner), 'content-type': 'application/json' },
      payload: { client_id: 'erin', zone: 'de-fra', reusable: true, expires_at: until.toISOString() },
    });
    assert.equal(made.statusCode, 201, made.body);
    const erin = json(await put(s, 'erin')).url;
    const fields = Object.fromEntries(String((await feed(s, erin)).headers['subscription-userinfo']).split('; ').map((kv) => kv.split('=')));
    assert.equal(fields.expire, String(Math.floor(until.getTime() / 1000)));
  });

  test('?format=singbox is sing-box; an unknown format names the valid ones', async () => {
    const sb = await feed(s, `${url}?format=singbox`);
    assert.equal(sb.statusCode, 200);
    assert.deepEqual(json(sb).inbounds.map((i: { type: string }) => i.type), ['tun', 'mixed']);
    const bad = assertError(await feed(s, `${url}?format=surge`), 400, 'invalid_request');
    assert.match(bad.message, /format must be one of: base64, xray, sing-box, clash, singbox/);
  });

  test('a browser gets the page: usage, renewal, one QR code and one import button per app, no script', async () => {
    const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/141.0' };
    const res = await feed(s, url, browser);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.match(String(res.headers['content-security-policy']), /default-src 'none'/);
    assert.equal(res.headers['cache-control'], 'no-store');
    const html = res.body;
    assert.doesNotMatch(html, /<script/i);
    assert.match(html, /of 200(\.0)? MB used this period/);
    assert.match(html, /Renews on <strong>/);
    for (const app of ['v2rayNG', 'Hiddify', 'sing-box', 'Clash Meta (Mihomo)', 'Streisand / Happ']) assert.ok(html.includes(`Import into ${app}</a>`), app);
    assert.equal(html.match(/<svg/g)?.length, 5, 'one QR code per app');
    assert.match(html, /href="v2rayng:\/\/install-config\?url=https%3A%2F%2Fvpn\.example\.com%3A8443%2Fsub%2F[A-Za-z0-9_-]{43}"/);
    assert.match(html, /href="sing-box:\/\/import-remote-profile\?url=[^"]+format%3Dsing-box/);
    // An app asking with a browser-like Accept still gets its feed; ?format= always wins.
    assert.match(String((await feed(s, url, { ...browser, 'user-agent': 'v2rayNG/1.9.30' })).headers['content-type']), /^text\/plain/);
    assert.match(String((await feed(s, `${url}?format=clash`, browser)).headers['content-type']), /^text\/yaml/);
  });
});
