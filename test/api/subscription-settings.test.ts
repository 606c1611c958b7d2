// GET|PATCH /v2/subscription-settings and what it puts into every feed: owner and agent read,
// only an owner changes (audited); null clears; URLs, the announcement and unknown fields are
// validated in the error record; every format carries support-url, profile-web-page-url and
// announce (base64) once set and none before; the page shows the announcement and "Get help",
// escaped. On PostgreSQL, two instances of one database: a change made on one is in the other's feeds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { assertError, assertRateHeaders, auth, createSession, ISO_MS_Z, json, makeServer, removeDir, tempDir, type TestServer } from '../helpers/server.ts';

const URL_ = '/v2/subscription-settings';
const read = (s: TestServer, token = s.owner) => s.app.inject({ url: URL_, headers: auth(token) });
const patch = (s: TestServer, payload: unknown, token = s.owner) =>
  s.app.inject({ method: 'PATCH', url: URL_, headers: { ...auth(token), 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
const feed = (s: TestServer, url: string, headers: Record<string, string> = {}) => {
  const u = new URL(url);
  return s.app.inject({ url: u.pathname + u.search, headers });
};
/** A fetch answer in the shape assertError reads. */
const asInjected = async (r: Promise<Response>) => {
  const res = await r;
  return { statusCode: res.status, headers: Object.fromEntries(res.headers), body: await res.text() } as unknown as Parameters<typeof assertError>[0];
};
const EMPTY = { support_url: null, profile_web_page_url: null, announce: null, updated_at: null };
const BROWSER = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/141.0' };

describe('the settings record', () => {
  let s: TestServer;
  before(async () => {
    s = await makeServer();
  });
  after(() => s.close());

  test('nothing set: GET answers every field null, for owner and agent tokens', async () => {
    for (const token of [s.owner, s.agent]) {
      const res = await read(s, token);
      assert.equal(res.statusCode, 200, res.body);
      assertRateHeaders(res);
      assert.deepEqual(json(res), EMPTY);
    }
  });

  test('PATCH (owner) changes only the fields sent; GET shows them to the agent too; null clears one', async () => {
    const set = await patch(s, { support_url: 'https://t.me/acme_help', announce: 'Обслуживание в воскресенье 🛠' });
    assert.equal(set.statusCode, 200, set.body);
    const rec = json(set);
    assert.deepEqual(Object.keys(rec).sort(), ['announce', 'profile_web_page_url', 'support_url', 'updated_at']);
    assert.equal(rec.support_url, 'https://t.me/acme_help');
    assert.equal(rec.announce, 'Обслуживание в воскресенье 🛠');
    assert.equal(rec.profile_web_page_url, null);
    assert.match(rec.updated_at, ISO_MS_Z);
    assert.deepEqual(json(await read(s, s.agent)), rec);

    const more = json(await patch(s, { profile_web_page_url: 'http://acme.example/vpn' }));
    assert.equal(more.support_url, 'https://t.me/acme_help', 'a field not sent stays');
    assert.equal(more.profile_web_page_url, 'http://acme.example/vpn');
    const cleared = json(await patch(s, { support_url: null }));
    assert.equal(cleared.support_url, null);
    assert.equal(cleared.announce, 'Обслуживание в воскресенье 🛠');
  });

  test('customers are apart: another customer sees its own (none)', async () => {
    assert.deepEqual(json(await read(s, s.other)), EMPTY);
  });

  test('an agent token may read but not change them: 403 forbidden, nothing changed', async () => {
    const before = json(await read(s));
    const e = assertError(await patch(s, { announce: 'agent was here' }, s.agent), 403, 'forbidden');
    assert.equal(e.details.role, 'agent');
    assert.deepEqual(json(await read(s)), before);
  });

  test('401 without a token', async () => {
    assertError(await s.app.inject({ url: URL_ }), 401, 'unauthorized');
    assertError(await s.app.inject({ method: 'PATCH', url: URL_, payload: { announce: 'x' } }), 401, 'unauthorized');
  });

  test('validation: http(s) URLs up to 2048 characters, plain text up to 200, no unknown fields; 400 in the error record, nothing changed', async () => {
    const before = json(await read(s));
    const badUrls = ['ftp://acme.example/', 'javascript:alert(1)', 'acme.example/help', 'https://', 'https://acme .example/', 'https:acme.example', 'https://acme.example/\u0000'];
    for (const bad of badUrls) {
      for (const field of ['support_url', 'profile_web_page_url']) {
        const e = assertError(await patch(s, { [field]: bad }), 400, 'invalid_request');
        assert.equal(e.details.location, 'body');
        assert.deepEqual((e.details.fields as { field: string }[]).map((f) => f.field), [field], `${field}: ${JSON.stringify(bad)}`);
        assert.match(e.message, new RegExp(`${field} must be an http:// or https:// URL`));
      }
    }
    const long = `https://acme.example/${'a'.repeat(2048 - 21)}`;
    assert.equal(long.length, 2048);
    assert.equal((await patch(s, { support_url: long })).statusCode, 200, 'exactly 2048 is fine');
    assertError(await patch(s, { support_url: `${long}a` }), 400, 'invalid_request');
    assert.equal((await patch(s, { announce: 'я'.repeat(200) })).statusCode, 200, '200 characters in any language');
    const tooLong = assertError(await patch(s, { announce: 'я'.repeat(201) }), 400, 'invalid_request');
    assert.match(tooLong.message, /announce/);
    const bell = assertError(await patch(s, { announce: 'ring \u0007' }), 400, 'invalid_request');
    assert.match(bell.message, /announce must be plain text/);
    const unknown = assertError(await patch(s, { announce: 'x', colour: 'red' }), 400, 'invalid_request');
    assert.deepEqual(unknown.details.unknown_fields, ['colour']);
    assertError(await patch(s, {}), 400, 'invalid_request');
    assertError(await patch(s, { announce: 42 }), 400, 'invalid_request');
    assertError(await patch(s, { announce: '' }), 400, 'invalid_request');
    assertError(await patch(s, ['announce']), 400, 'invalid_request');
    // Put back what was there and check nothing else moved.
    await patch(s, { support_url: before.support_url, announce: before.announce });
    const now = json(await read(s));
    assert.deepEqual({ ...now, updated_at: null }, { ...before, updated_at: null });
  });

  test('audited: each owner change is subscription.settings with before and after; agents do not see it; a refused change records nothing', async () => {
    const page = json(await s.app.inject({ url: '/v2/audit?action=subscription.settings&limit=500', headers: auth(s.owner) }));
    const entries = page.entries as { action: string; actor: { role: string }; target: { type: string; id: string }; before: any; after: any }[];
    // Three changes in the second test, three in the validation test (403, 401 and 400: none).
    assert.equal(entries.length, 6);
    const [last, prev] = entries;
    assert.equal(last.actor.role, 'owner');
    assert.equal(last.target.type, 'subscription_settings');
    assert.deepEqual(Object.keys(last.after).sort(), ['announce', 'profile_web_page_url', 'support_url']);
    assert.deepEqual(last.before, prev.after, 'each entry starts where the one before ended');
    const first = entries.at(-1)!;
    assert.deepEqual(first.before, { support_url: null, profile_web_page_url: null, announce: null });
    assert.deepEqual(first.after, { support_url: 'https://t.me/acme_help', profile_web_page_url: null, announce: 'Обслуживание в воскресенье 🛠' });
    const agentPage = json(await s.app.inject({ url: '/v2/audit?action=subscription.settings', headers: auth(s.agent) }));
    assert.deepEqual(agentPage.entries, []);
  });

  test('the OpenAPI document lists both routes as extensions', async () => {
    const doc = json(await s.app.inject({ url: '/v2/openapi.json' }));
    const ops = doc.paths['/v2/subscription-settings'];
    for (const m of ['get', 'patch']) assert.equal(ops[m]['x-extension'], true, m);
    assert.ok(['400', '403'].every((c) => c in ops.patch.responses));
  });
});

describe('the settings in every feed and on the page', () => {
  let s: TestServer;
  let url: string;
  const formats = ['base64', 'xray', 'sing-box', 'clash'];
  before(async () => {
    s = await makeServer({ publicHost: 'vpn.example.com', publicPort: 8443 });
    await createSession(s.app, s.owner, { client_id: 'bob', zone: 'de-fra', reusable: true });
    url = json(await s.app.inject({ method: 'PUT', url: '/v2/subscriptions/bob', headers: auth(s.owner) })).url;
  });
  after(() => s.close());

  test('none set: no support-url, profile-web-page-url or announce header in any format; the page has no announcement or "Get help"', async () => {
    for (const f of formats) {
      const res = await feed(s, `${url}?format=${f}`);
      assert.equal(res.statusCode, 200);
      for (const h of ['support-url', 'profile-web-page-url', 'announce']) assert.equal(res.headers[h], undefined, `${f}: ${h}`);
    }
    const html = (await feed(s, url, BROWSER)).body;
    assert.doesNotMatch(html, /Get help|class="announce"/);
  });

  test('set: every format carries the three headers; announce is base64 of the UTF-8 text; a non-ASCII URL goes in encoded form', async () => {
    const text = 'Ремонт 03:00–05:00 UTC · 維護 🛠';
    assert.equal((await patch(s, { support_url: 'https://t.me/acme_help', profile_web_page_url: 'https://пример.рф/о нас'.replace(' ', '-'), announce: text })).statusCode, 200);
    for (const f of formats) {
      const res = await feed(s, `${url}?format=${f}`);
      assert.equal(res.headers['support-url'], 'https://t.me/acme_help', f);
      assert.equal(res.headers['profile-web-page-url'], 'https://xn--e1afmkfd.xn--p1ai/%D0%BE-%D0%BD%D0%B0%D1%81', f);
      const announce = String(res.headers.announce);
      assert.match(announce, /^base64:[A-Za-z0-9+/]+=*$/, f);
      assert.equal(Buffer.from(announce.slice(7), 'base64').toString('utf8'), text, f);
    }
    // The format a User-Agent picks carries them too (Happ and v2rayNG read base64, Hiddify sing-box).
    for (const ua of ['Happ/3.2.1', 'v2rayNG/1.9.30', 'HiddifyNext/2.5.7']) assert.equal((await feed(s, url, { 'user-agent': ua })).headers['support-url'], 'https://t.me/acme_help', ua);
  });

  test('the page shows the announcement at the top and a "Get help" link to the support URL, everything escaped', async () => {
    const announce = 'Read <b>this</b> & "that"\nsecond line <script>alert(1)</script>';
    const support = 'https://help.example/?a=1&b=<x>"y"';
    assert.equal((await patch(s, { support_url: support, announce })).statusCode, 200);
    const res = await feed(s, url, BROWSER);
    assert.equal(res.statusCode, 200);
    const html = res.body;
    assert.doesNotMatch(html, /<script|<b>/i);
    assert.ok(html.includes('Read &#60;b&#62;this&#60;/b&#62; &#38; &#34;that&#34;\nsecond line &#60;script&#62;'), 'the announcement, escaped, line break kept');
    assert.ok(html.includes('href="https://help.example/?a=1&#38;b=&#60;x&#62;&#34;y&#34;"'), 'the support link, escaped');
    assert.match(html, /<a class="button" href="[^"]+" rel="noopener noreferrer">Get help<\/a>/);
    const at = (needle: string) => html.indexOf(needle);
    assert.ok(at('class="announce"') > at('<h1>') && at('class="announce"') < at('Your data') && at('Get help') < at('Your data'), 'at the top, under the title');
    // The headers stay header-safe whatever the text.
    const res2 = await feed(s, url);
    assert.equal(Buffer.from(String(res2.headers.announce).slice(7), 'base64').toString('utf8'), announce);
    assert.equal(res2.headers['support-url'], support);
  });

  test('cleared: the headers go again', async () => {
    assert.equal((await patch(s, { support_url: null, profile_web_page_url: null, announce: null })).statusCode, 200);
    const res = await feed(s, url);
    for (const h of ['support-url', 'profile-web-page-url', 'announce']) assert.equal(res.headers[h], undefined, h);
  });
});

test('PostgreSQL, two instances: settings changed on one are read, and carried by the feeds, on the other', async (t) => {
  const pg = await startPostgres(t);
  const url = await pg.createDatabase('subsettings');
  const dirs = [tempDir('vad-subset-a-'), tempDir('vad-subset-b-')];
  const servers: RunningServer[] = [];
  try {
    for (const dir of dirs) servers.push(await startServer({ dataDir: dir, database: url, port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } }));
    const [a, b] = servers;
    const owner = (await a.services.data.createToken('acme', 'owner')).token;
    const call = (srv: RunningServer, method: string, path: string, body?: unknown) =>
      fetch(`${srv.baseUrl}${path}`, { method, headers: { ...auth(owner), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    assert.deepEqual(await (await call(b, 'GET', '/subscription-settings')).json(), EMPTY);
    const set = await call(a, 'PATCH', '/subscription-settings', { support_url: 'https://t.me/acme_help', announce: 'Привет' });
    assert.equal(set.status, 200);
    const onB = (await (await call(b, 'GET', '/subscription-settings')).json()) as { announce: string };
    assert.equal(onB.announce, 'Привет');
    const sub = (await (await call(a, 'PUT', '/subscriptions/bob')).json()) as { url: string };
    const res = await fetch(sub.url.replace(/^https?:\/\/[^/]+/, b.origin));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('support-url'), 'https://t.me/acme_help');
    assert.equal(res.headers.get('announce'), `base64:${Buffer.from('Привет', 'utf8').toString('base64')}`);
    assertError(await asInjected(call(b, 'PATCH', '/subscription-settings', { support_url: 'ftp://x' })), 400, 'invalid_request');
  } finally {
    for (const srv of servers) await srv.close();
    for (const dir of dirs) removeDir(dir);
  }
});
