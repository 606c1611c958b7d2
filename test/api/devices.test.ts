// Device limits over real HTTP, on SQLite and on PostgreSQL: max_devices 2 lets two apps that
// send x-hwid fetch links and refuses a third (200, empty body, x-hwid-max-devices-reached,
// announce in words); an app without x-hwid is refused while a limit is set (x-hwid-not-supported)
// and served without one; removing a device frees its slot (owner only, audited; agents read);
// headers are validated; unknown clients and other customers see nothing; the browser page is
// no device; max_devices is validated and 0 means no limit; a client's override sets its own.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import fc from 'fast-check';
import { HWID_PATTERN } from '../../server/contract/devices.ts';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { auth, json, makeServer, removeDir, tempDir } from '../helpers/server.ts';

interface Ctx {
  srv: RunningServer;
  owner: string;
  agent: string;
  other: string;
}

async function call(c: Ctx, method: string, path: string, body?: unknown, token = c.owner): Promise<{ status: number; json: any }> {
  const res = await fetch(`${c.srv.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

const HAPP = (hwid: string, more: Record<string, string> = {}) => ({ 'user-agent': 'Happ/3.2.1', 'x-hwid': hwid, ...more });
const decode = (h: string | null) => (h?.startsWith('base64:') ? Buffer.from(h.slice(7), 'base64').toString('utf8') : h);

async function feedOf(c: Ctx, url: string, headers: Record<string, string>) {
  const res = await fetch(url.replace(/^https?:\/\/[^/]+/, c.srv.origin), { headers });
  const body = await res.text();
  const links = res.headers.get('content-type')?.startsWith('text/plain') && body ? Buffer.from(body, 'base64').toString('utf8').split('\n').filter((l) => l.startsWith('vless://')) : [];
  return { res, body, links };
}

function assertRefused(f: Awaited<ReturnType<typeof feedOf>>, flag: 'x-hwid-max-devices-reached' | 'x-hwid-not-supported', words: RegExp) {
  assert.equal(f.res.status, 200, 'the apps expect 200 and read the headers');
  assert.equal(f.body, '', 'no links, no body');
  assert.match(f.res.headers.get('content-type')!, /^text\/plain/);
  assert.equal(f.res.headers.get(flag), 'true');
  assert.equal(f.res.headers.get('x-hwid-active'), 'true');
  assert.equal(f.res.headers.get('x-hwid-limit'), 'true');
  const other = flag === 'x-hwid-not-supported' ? 'x-hwid-max-devices-reached' : 'x-hwid-not-supported';
  assert.equal(f.res.headers.get(other), null);
  assert.match(f.res.headers.get('announce')!, /^base64:/);
  assert.match(decode(f.res.headers.get('announce'))!, words);
  assert.ok(f.res.headers.get('subscription-userinfo'), 'the usual headers still come');
  assert.equal(f.res.headers.get('content-disposition'), null, 'nothing to save as a profile');
}

async function scenario(c: Ctx): Promise<void> {
  const s = await call(c, 'POST', '/sessions', { client_id: 'bob', zone: 'de-fra', reusable: true });
  assert.equal(s.status, 201, JSON.stringify(s.json));
  const { url } = (await call(c, 'PUT', '/subscriptions/bob')).json as { url: string };
  await limitOfTwo(c, url);
  await listAndRemove(c, url);
  await validation(c, url);
  await override(c, url);
}

/** The client's own override of the template sets max_devices for that client alone. */
async function override(c: Ctx, url: string): Promise<void> {
  // The template has no limit now; bob's override of 1 holds for bob (who has more devices).
  assert.equal((await call(c, 'PATCH', '/clients/bob/limits', { max_devices: 1 })).status, 200);
  assertRefused(await feedOf(c, url, HAPP('F6')), 'x-hwid-max-devices-reached', /for one device/);
  const client = (await call(c, 'GET', '/clients/bob')).json;
  assert.deepEqual([client.limits.max_devices, client.limit_sources.max_devices], [1, 'override']);
  // The override removed: the template (no limit) holds again.
  assert.equal((await call(c, 'DELETE', '/clients/bob/limits')).status, 204);
  assert.equal((await feedOf(c, url, HAPP('F6'))).links.length, 1);
}

/** No limit, then max_devices 2: two devices served, the third and an app without x-hwid refused; the page is no device. */
async function limitOfTwo(c: Ctx, url: string): Promise<void> {

  // No limit yet: an app without x-hwid gets links; one with x-hwid is registered and served.
  let f = await feedOf(c, url, { 'user-agent': 'v2rayNG/1.9.30' });
  assert.equal(f.links.length, 1);
  assert.equal(f.res.headers.get('x-hwid-active'), null);
  f = await feedOf(c, url, HAPP('A1', { 'x-device-os': 'Android', 'x-ver-os': '14', 'x-device-model': 'Pixel 8' }));
  assert.equal(f.links.length, 1);
  assert.equal((await call(c, 'GET', '/clients/bob/devices')).json.devices.length, 1);

  // max_devices 2: A1 and B2 get links (x-hwid-active), C3 is refused with the headers and no links.
  assert.equal((await call(c, 'PATCH', '/customer/limits/client', { max_devices: 2 })).status, 200);
  f = await feedOf(c, url, HAPP('B2', { 'x-device-os': 'iOS' }));
  assert.equal(f.links.length, 1);
  assert.equal(f.res.headers.get('x-hwid-active'), 'true');
  assert.equal(f.res.headers.get('x-hwid-max-devices-reached'), null);
  assertRefused(await feedOf(c, url, HAPP('C3')), 'x-hwid-max-devices-reached', /Device limit reached: this subscription is for 2 devices/);
  assertRefused(await feedOf(c, url, { 'user-agent': 'Happ/3.2.1', 'x-hwid': 'C3' }), 'x-hwid-max-devices-reached', /all of them in use/);
  for (const h of ['A1', 'B2']) assert.equal((await feedOf(c, url, HAPP(h))).links.length, 1, `${h} is still served`);
  // Every format refuses alike.
  for (const fmt of ['xray', 'sing-box', 'clash']) {
    const r = await fetch(`${url.replace(/^https?:\/\/[^/]+/, c.srv.origin)}?format=${fmt}`, { headers: HAPP('C3') });
    assert.equal(await r.text(), '', fmt);
    assert.equal(r.headers.get('x-hwid-max-devices-reached'), 'true', fmt);
  }
  // Without x-hwid while the limit is set: refused, x-hwid-not-supported.
  assertRefused(await feedOf(c, url, { 'user-agent': 'v2rayNG/1.9.30' }), 'x-hwid-not-supported', /does not identify its device/);

  // The browser page is no device: shown as before, nothing registered.
  const page = await fetch(url.replace(/^https?:\/\/[^/]+/, c.srv.origin), { headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0', 'x-hwid': 'BROWSER' } });
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type')!, /^text\/html/);
  assert.match(await page.text(), /<html/i);
}

/** The list (owner and agent), removal (owner only, audited) freeing a slot. */
async function listAndRemove(c: Ctx, url: string): Promise<void> {

  // The list: newest first, nulls where unknown, owner and agent alike.
  const list = await call(c, 'GET', '/clients/bob/devices', undefined, c.agent);
  assert.equal(list.status, 200);
  assert.deepEqual(list.json.devices.map((d: any) => d.hwid), ['B2', 'A1']);
  const a1 = list.json.devices[1];
  assert.deepEqual(Object.keys(a1).sort(), ['device_model', 'device_os', 'first_seen', 'hwid', 'last_seen', 'os_version', 'user_agent']);
  assert.deepEqual([a1.device_os, a1.os_version, a1.device_model, a1.user_agent], ['Android', '14', 'Pixel 8', 'Happ/3.2.1']);
  assert.deepEqual([list.json.devices[0].device_os, list.json.devices[0].os_version, list.json.devices[0].device_model], ['iOS', null, null]);
  assert.deepEqual(await call(c, 'GET', '/clients/bob/devices'), list);

  // Removing: agents may not (403); the owner's removal (204) frees the slot at once and is audited.
  const denied = await call(c, 'DELETE', '/clients/bob/devices/B2', undefined, c.agent);
  assert.equal(denied.status, 403);
  assert.equal(denied.json.error.code, 'forbidden');
  const gone = await fetch(`${c.srv.baseUrl}/clients/bob/devices/B2`, { method: 'DELETE', headers: { authorization: `Bearer ${c.owner}` } });
  assert.equal(gone.status, 204);
  assert.equal(await gone.text(), '');
  const again = await call(c, 'DELETE', '/clients/bob/devices/B2');
  assert.equal(again.status, 404);
  assert.equal(again.json.error.code, 'device_not_found');
  assert.equal((await feedOf(c, url, HAPP('C3'))).links.length, 1, 'the freed slot is C3\'s');
  assertRefused(await feedOf(c, url, HAPP('B2')), 'x-hwid-max-devices-reached', /2 devices/);
  const audit = await call(c, 'GET', '/audit?action=device.remove');
  assert.equal(audit.json.entries.length, 1);
  const e = audit.json.entries[0];
  assert.deepEqual([e.target, e.client_id, e.after, e.before.hwid, e.actor.role], [{ type: 'device', id: 'B2' }, 'bob', null, 'B2', 'owner']);
  assert.equal((await call(c, 'GET', '/audit?action=device.remove', undefined, c.agent)).json.entries.length, 0, 'owner business');
}

/** Header rules, unknown clients and other customers, max_devices values (0: no limit; lowering removes nobody). */
async function validation(c: Ctx, url: string): Promise<void> {

  // Headers validated: a malformed x-hwid is 400 in the error record; descriptive headers that are
  // not printable are dropped, long ones cut.
  for (const bad of ['has space', 'a/b', 'x'.repeat(129), 'A1, B2']) {
    const r = await feedOf(c, url, HAPP(bad));
    assert.equal(r.res.status, 400, bad);
    const err = JSON.parse(r.body).error;
    assert.equal(err.code, 'invalid_request');
    assert.deepEqual(err.details, { location: 'headers', header: 'x-hwid' });
  }
  assert.equal((await call(c, 'DELETE', '/clients/bob/devices/A1')).status, 204);
  let f = await feedOf(c, url, HAPP('D4', { 'x-device-model': 'Caf\u00e9 phone', 'x-device-os': '  Linux  ', 'user-agent': `Happ/${'9'.repeat(400)}` }));
  assert.equal(f.links.length, 1);
  const d4 = (await call(c, 'GET', '/clients/bob/devices')).json.devices.find((d: any) => d.hwid === 'D4');
  assert.deepEqual([d4.device_model, d4.device_os, d4.user_agent.length], [null, 'Linux', 256]);

  // Unknown clients, bad names, another customer: nothing to see or remove.
  assert.deepEqual((await call(c, 'GET', '/clients/nobody/devices')).json, { devices: [] });
  assert.equal((await call(c, 'DELETE', '/clients/nobody/devices/A1')).json.error.code, 'device_not_found');
  assert.deepEqual((await call(c, 'GET', '/clients/bob/devices', undefined, c.other)).json, { devices: [] });
  assert.equal((await call(c, 'DELETE', '/clients/bob/devices/C3', undefined, c.other)).status, 404);
  assert.equal((await call(c, 'GET', '/clients/a%20b/devices')).status, 400);
  assert.equal((await call(c, 'DELETE', '/clients/bob/devices/a%2Fb')).status, 400);

  // max_devices: 0 to 1000 (0: no limit, as the panels read it); null removes it.
  for (const bad of [-1, 1001, 1.5, '2']) assert.equal((await call(c, 'PATCH', '/customer/limits/client', { max_devices: bad })).status, 400, String(bad));
  assert.equal((await call(c, 'PATCH', '/customer/limits/client', { max_devices: 0 })).json.max_devices, 0);
  f = await feedOf(c, url, { 'user-agent': 'v2rayNG/1.9.30' });
  assert.equal(f.links.length, 1, '0: no limit');
  assert.equal(f.res.headers.get('x-hwid-active'), null);
  assert.equal((await call(c, 'PATCH', '/customer/limits/client', { max_devices: 1 })).status, 200);
  assert.equal((await feedOf(c, url, HAPP('C3'))).links.length, 1, 'lowering the limit removes no device');
  assertRefused(await feedOf(c, url, HAPP('E5')), 'x-hwid-max-devices-reached', /for one device/);
  assert.equal((await call(c, 'PATCH', '/customer/limits/client', { max_devices: null })).json.max_devices, undefined);
  assert.equal((await feedOf(c, url, HAPP('E5'))).links.length, 1);
}

async function run(t: TestContext, database?: string): Promise<void> {
  const dir = tempDir('vad-devices-');
  const srv = await startServer({ dataDir: dir, ...(database ? { database } : {}), port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  t.after(async () => {
    await srv.close();
    removeDir(dir);
  });
  const token = async (customer: string, role: 'owner' | 'agent') => (await srv.services.data.createToken(customer, role)).token;
  await scenario({ srv, owner: await token('acme', 'owner'), agent: await token('acme', 'agent'), other: await token('globex', 'owner') });
}

test('device limits over HTTP (SQLite)', async (t) => run(t));

test('device limits over HTTP (PostgreSQL)', async (t) => {
  const pg = await startPostgres(t);
  await run(t, await pg.createDatabase('devices'));
});

test('the OpenAPI document lists the device routes and max_devices as extensions', async (t) => {
  const dir = tempDir('vad-devices-doc-');
  const srv = await startServer({ dataDir: dir, dataPlane: null, port: 0, vlessTcpPort: null, proxyPort: null });
  t.after(async () => {
    await srv.close();
    removeDir(dir);
  });
  const doc = (await (await fetch(`${srv.baseUrl}/openapi.json`)).json()) as any;
  const list = doc.paths['/v2/clients/{client_id}/devices'].get;
  const del = doc.paths['/v2/clients/{client_id}/devices/{hwid}'].delete;
  for (const op of [list, del]) {
    assert.equal(op['x-extension'], true);
    assert.deepEqual(op.tags, ['clients']);
  }
  assert.ok(del.responses['403'] && del.responses['404'] && del.responses['204']);
  const json = JSON.stringify(doc);
  assert.match(json, /"max_devices":\{[^}]*"x-extension":true/);
});

test('hostile device headers: any x-hwid is 200 (well-formed, registered) or 400 (the error record), never stored otherwise', async (t) => {
  const s = await makeServer();
  t.after(() => s.close());
  await s.app.inject({ method: 'PATCH', url: '/v2/customer/limits/client', headers: auth(s.owner), payload: { max_devices: 1000 } });
  const path = new URL(json(await s.app.inject({ method: 'PUT', url: '/v2/subscriptions/bob', headers: auth(s.owner) })).url).pathname;
  const value = fc.string({ unit: 'binary', maxLength: 300 }).filter((v) => !/[\r\n\0]/.test(v) && v.trim() === v);
  await fc.assert(
    fc.asyncProperty(value, value, async (hwid, model) => {
      const res = await s.app.inject({ url: path, headers: { 'user-agent': 'Happ/3.2.1', 'x-hwid': hwid, 'x-device-model': model } });
      if (hwid === '' || new RegExp(HWID_PATTERN).test(hwid)) assert.equal(res.statusCode, 200, res.body);
      else assert.deepEqual(json(res).error.details, { location: 'headers', header: 'x-hwid' });
    }),
    { numRuns: 150 },
  );
  const { devices } = json(await s.app.inject({ url: '/v2/clients/bob/devices', headers: auth(s.owner) }));
  for (const d of devices) {
    assert.match(d.hwid, new RegExp(HWID_PATTERN));
    assert.ok(d.device_model === null || /^[\x20-\x7e]{1,128}$/.test(d.device_model), d.device_model);
  }
});
