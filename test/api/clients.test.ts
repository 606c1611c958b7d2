// /v2/clients on SQLite and on PostgreSQL: the list (sessions' clients and clients with a record,
// newest last_seen first, a status filter, named clients), one client (404 when unknown), disable and expiry
// (the status, 422 on a new session, a past expiry 400), the limits override (merge, null
// removes, 404 without one, DELETE 204, the limits in force and their sources), reset-usage
// (an over-quota client counted from zero again), validation and wrong types in the error
// record, agents reading but never writing (403), customers apart, the audit trail.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { periodOf } from '../../server/contract/period.ts';
import { silentLogger } from '../../server/log.ts';
import { startQuotaJob } from '../../server/quota/job.ts';
import { assertError, auth, createSession, ISO_MS_Z, json, makeServer, type TestServer, UUID_V4 } from '../helpers/server.ts';

const CLIENT_KEYS = ['client_id', 'disabled', 'downloaded_bytes', 'expires_at', 'last_seen', 'limit_sources', 'limits', 'period', 'sessions', 'status', 'uploaded_bytes'];

function suite(kind: 'sqlite' | 'postgres') {
  describe(`/v2/clients on ${kind}`, () => {
    let pg: PgServer | undefined;
    let s: TestServer;
    const call = (method: 'GET' | 'PATCH' | 'POST' | 'DELETE', url: string, body?: unknown, token = s.owner) =>
      s.app.inject({
        method,
        url: `/v2${url}`,
        headers: { ...auth(token), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
    const ok = async (method: 'GET' | 'PATCH' | 'POST' | 'DELETE', url: string, body?: unknown) => {
      const res = await call(method, url, body);
      assert.ok(res.statusCode === 200 || res.statusCode === 204, `${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.statusCode === 204 ? null : json(res);
    };
    const inAMoment = (ms: number) => new Date(Date.now() + ms).toISOString();
    let acmeId = '';

    before(async () => {
      if (kind === 'postgres') pg = await startPostgres();
      s = await makeServer(pg ? { database: pg.url() } : {});
    });
    after(async () => {
      await s?.close();
      await pg?.destroy();
    });

    test('unknown client: 404 client_not_found on read, override read and delete, reset-usage; a bad client_id is 400', async () => {
      for (const [m, u] of [['GET', '/clients/nobody'], ['GET', '/clients/nobody/limits'], ['DELETE', '/clients/nobody/limits'], ['POST', '/clients/nobody/reset-usage']] as const) {
        const e = assertError(await call(m, u), 404, 'client_not_found');
        assert.equal(e.details.client_id, 'nobody');
      }
      assertError(await call('GET', '/clients/bad%20id'), 400, 'invalid_request');
      assert.deepEqual(json(await call('GET', '/clients')), { clients: [] });
    });

    test('the clients of the sessions: fields, totals, newest last_seen first then client_id', async () => {
      const a = await createSession(s.app, s.owner, { client_id: 'alice', reusable: true });
      await createSession(s.app, s.owner, { client_id: 'alice' });
      const b = await createSession(s.app, s.owner, { client_id: 'bob' });
      await createSession(s.app, s.owner, { client_id: 'carol' });
      acmeId = (await s.services.data.getSession(a.id))!.customer_id;
      await s.services.data.saveRuntime(a.id, { uploaded_bytes: 300, downloaded_bytes: 4000 });
      const minute = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
      await s.services.data.addUsage([{ session_id: b.id, node: 'local', start: minute, uploaded_bytes: 5, downloaded_bytes: 7 }]);
      const list = json(await call('GET', '/clients')).clients;
      assert.deepEqual(list.map((c: { client_id: string }) => c.client_id), ['bob', 'alice', 'carol'], 'bob was seen; alice and carol never, by client_id');
      const alice = list[1];
      assert.deepEqual(Object.keys(alice).sort(), CLIENT_KEYS);
      assert.deepEqual(alice, {
        client_id: 'alice', status: 'idle', sessions: 2, uploaded_bytes: 300, downloaded_bytes: 4000, period: null,
        limits: {}, limit_sources: {}, disabled: false, expires_at: null, last_seen: null,
      });
      assert.equal(list[0].last_seen, new Date(minute + 60_000).toISOString(), 'the end of its last minute of traffic');
      assert.deepEqual(json(await call('GET', '/clients/alice')), alice);
      assert.deepEqual(json(await call('GET', '/clients/alice', undefined, s.agent)), alice, 'agents read');
      assertError(await call('GET', '/clients/alice', undefined, s.other), 404, 'client_not_found');
      assert.deepEqual(json(await call('GET', '/clients', undefined, s.other)), { clients: [] }, 'another customer has its own');
    });

    test('disable: status disabled, a new session is 422 client_disabled, enabling lets it in again; agents get 403', async () => {
      const e403 = assertError(await call('PATCH', '/clients/bob', { disabled: true }, s.agent), 403, 'forbidden');
      assert.equal(e403.details.resource, 'clients');
      const off = await ok('PATCH', '/clients/bob', { disabled: true });
      assert.equal(off.status, 'disabled');
      assert.equal(off.disabled, true);
      const refused = assertError(await call('POST', '/sessions', { client_id: 'bob', zone: 'de-fra' }), 422, 'client_disabled');
      assert.match(refused.message, /disabled/);
      assert.deepEqual(json(await call('GET', '/clients?status=disabled')).clients.map((c: { client_id: string }) => c.client_id), ['bob']);
      assertError(await call('GET', '/clients?status=gone'), 400, 'invalid_request');
      const on = await ok('PATCH', '/clients/bob', { disabled: false });
      assert.equal(on.status, 'idle');
      await createSession(s.app, s.owner, { client_id: 'bob' });
      // A client with no session yet gets a record: it is listed and can be prepared.
      const dave = await ok('PATCH', '/clients/dave', { disabled: true });
      assert.equal(dave.sessions, 0);
      assert.ok(json(await call('GET', '/clients')).clients.some((c: { client_id: string }) => c.client_id === 'dave'));
    });

    test('status precedence: paused (every live session paused), active (a connection open), over_quota, expired, disabled', async () => {
      const one = await createSession(s.app, s.owner, { client_id: 'pat', reusable: true });
      assert.equal((await call('PATCH', `/sessions/${one.id}/pause`)).statusCode, 200);
      assert.equal(json(await call('GET', '/clients/pat')).status, 'paused');
      const two = await createSession(s.app, s.owner, { client_id: 'pat', reusable: true });
      assert.equal(json(await call('GET', '/clients/pat')).status, 'idle', 'not every live session is paused');
      await s.services.data.saveRuntime(two.id, { status: 'active', downloaded_bytes: 50 });
      const active = json(await call('GET', '/clients/pat'));
      assert.equal(active.status, 'active');
      assert.ok(Date.now() - Date.parse(active.last_seen) < 5000, 'seen now while a connection is open');
      await ok('PATCH', '/clients/pat/limits', { downloaded_bytes: 10 });
      assert.equal(json(await call('GET', '/clients/pat')).status, 'over_quota', 'over_quota before active');
      await ok('PATCH', '/clients/pat', { expires_at: inAMoment(60_000) });
      assert.equal(json(await call('GET', '/clients/pat')).status, 'over_quota', 'an expiry still ahead changes nothing');
      await ok('PATCH', '/clients/pat', { disabled: true });
      assert.equal(json(await call('GET', '/clients/pat')).status, 'disabled', 'disabled before everything');
    });

    test('validation in the error record: empty, unknown field, wrong types, a past or malformed expires_at', async () => {
      for (const body of [{}, { colour: 'red' }, { disabled: 'yes' }, { disabled: 1 }, { expires_at: 5 }, { expires_at: 'tomorrow' }, '[1]']) {
        assertError(await call('PATCH', '/clients/alice', body), 400, 'invalid_request');
      }
      assertError(await call('PATCH', '/clients/alice', { expires_at: '2999-01-01T00:00:00.000Z' }), 400, 'invalid_request');
      assertError(await call('PATCH', '/clients/alice', { disabled: true, expires_at: null, extra: 1 }), 400, 'invalid_request');
      assertError(await call('PATCH', '/clients/alice', 'not json'), 400, 'invalid_request');
      const past = assertError(await call('PATCH', '/clients/alice', { expires_at: '2020-01-01T00:00:00.000Z' }), 400, 'invalid_request');
      assert.equal(past.details.field, 'expires_at');
      assert.match(past.message, /future/);
      assertError(await call('PATCH', '/clients/alice/limits', { downloaded_bytes: 'lots' }), 400, 'invalid_request');
      assertError(await call('PATCH', '/clients/alice/limits', { downloaded_bytes: -1 }), 400, 'invalid_request');
      assertError(await call('PATCH', '/clients/alice/limits', { download_speed: 0 }), 400, 'invalid_request');
      assertError(await call('PATCH', '/clients/alice/limits', { default_lifetime_seconds: 600 }), 400, 'invalid_request');
      assertError(await call('PATCH', '/clients/alice/limits', {}), 400, 'invalid_request');
      assertError(await call('POST', '/clients/alice/reset-usage', { now: true }), 400, 'invalid_request');
      assert.equal(json(await call('GET', '/clients/alice')).disabled, false, 'nothing changed');
    });

    test('expiry: expires_at set shows, at that time the client is expired and new sessions are 422; null lifts it', async () => {
      const at = inAMoment(1200);
      const set = await ok('PATCH', '/clients/carol', { expires_at: at });
      assert.equal(set.expires_at, at);
      assert.equal(set.status, 'idle');
      await new Promise((r) => setTimeout(r, 1400));
      assert.equal(json(await call('GET', '/clients/carol')).status, 'expired');
      assertError(await call('POST', '/sessions', { client_id: 'carol', zone: 'de-fra' }), 422, 'client_expired');
      const lifted = await ok('PATCH', '/clients/carol', { expires_at: null });
      assert.equal(lifted.status, 'idle');
      assert.equal(lifted.expires_at, null);
    });

    test('the limits override: 404 without one, first PATCH creates, merge, null removes, in force over the template, DELETE 204', async () => {
      assertError(await call('GET', '/clients/alice/limits'), 404, 'limits_not_found');
      assertError(await call('DELETE', '/clients/alice/limits'), 404, 'limits_not_found');
      await ok('PATCH', '/customer/limits/client', { downloaded_bytes: 1_000_000, upload_speed: 100_000, max_sessions: 3 });
      assertError(await call('PATCH', '/clients/alice/limits', { downloaded_bytes: 5 }, s.agent), 403, 'forbidden');
      const first = await ok('PATCH', '/clients/alice/limits', { downloaded_bytes: 50_000_000, max_sessions: 1 });
      assert.match(first.id, UUID_V4);
      assert.match(first.created_at, ISO_MS_Z);
      assert.deepEqual({ ...first, id: 0, created_at: 0, updated_at: 0 }, { id: 0, created_at: 0, updated_at: 0, downloaded_bytes: 50_000_000, max_sessions: 1 });
      const merged = await ok('PATCH', '/clients/alice/limits', { max_sessions: null, reset_period: 'day' });
      assert.equal(merged.id, first.id);
      assert.deepEqual({ ...merged, id: 0, created_at: 0, updated_at: 0 }, { id: 0, created_at: 0, updated_at: 0, downloaded_bytes: 50_000_000, reset_period: 'day' });
      assert.deepEqual(json(await call('GET', '/clients/alice/limits', undefined, s.agent)), merged, 'agents read the override');
      const alice = json(await call('GET', '/clients/alice'));
      assert.deepEqual(alice.limits, { downloaded_bytes: 50_000_000, upload_speed: 100_000, max_sessions: 3, reset_period: 'day' });
      assert.deepEqual(alice.limit_sources, { downloaded_bytes: 'override', upload_speed: 'template', max_sessions: 'template', reset_period: 'override' });
      assert.match(alice.period.start, ISO_MS_Z);
      assert.ok(Date.parse(alice.period.end) - Date.parse(alice.period.start) === 86_400_000, 'a day');
      assert.deepEqual([alice.period.uploaded_bytes, alice.period.downloaded_bytes], [0, 0], 'the period counts from its base');
      assert.deepEqual(await s.services.data.quotaBase(acmeId, 'client', 'alice', Date.parse(alice.period.start)), { up: 300, down: 4000 }, 'the override\'s period base recorded when it was set');
      // The quota job records the bases of overrides with their own period (set here without the service).
      await s.services.data.patchClientLimits(acmeId, 'bob', { downloaded_bytes: 1, reset_period: 'week' });
      const week = periodOf({ reset_period: 'week' }, Date.now())!;
      assert.equal(await s.services.data.quotaBase(acmeId, 'client', 'bob', week.start), undefined);
      const job = startQuotaJob(s.services.data, silentLogger, 3_600_000);
      await job.runOnce();
      job.stop();
      assert.deepEqual(await s.services.data.quotaBase(acmeId, 'client', 'bob', week.start), { up: 0, down: 0 });
      await s.services.data.deleteClientLimits(acmeId, 'bob');
      assert.equal((await call('DELETE', '/clients/alice/limits', undefined, s.agent)).statusCode, 403);
      assert.equal((await call('DELETE', '/clients/alice/limits')).statusCode, 204);
      assertError(await call('GET', '/clients/alice/limits'), 404, 'limits_not_found');
      const back = json(await call('GET', '/clients/alice'));
      assert.deepEqual(back.limit_sources, { downloaded_bytes: 'template', upload_speed: 'template', max_sessions: 'template' });
      assert.equal(back.period, null);
      assert.deepEqual(await s.services.clients.limitsInForce(acmeId, 'alice'), back.limits, 'the resolver gives the limits in force');
      await ok('DELETE', '/customer/limits/client');
    });

    test('reset-usage: an over-quota client counts from zero again (lifetime cap), audited', async () => {
      const a = await createSession(s.app, s.owner, { client_id: 'erin' });
      await ok('PATCH', '/clients/erin/limits', { downloaded_bytes: 1000 });
      await s.services.data.saveRuntime(a.id, { downloaded_bytes: 1500, uploaded_bytes: 10 });
      assert.equal(json(await call('GET', '/clients/erin')).status, 'over_quota');
      assert.deepEqual(json(await call('GET', '/clients?status=over_quota')).clients.map((c: { client_id: string }) => c.client_id), ['erin']);
      assertError(await call('POST', '/clients/erin/reset-usage', undefined, s.agent), 403, 'forbidden');
      const after = await ok('POST', '/clients/erin/reset-usage');
      assert.equal(after.status, 'idle', 'counted from the reset');
      assert.equal(after.downloaded_bytes, 1500, 'lifetime totals stay');
      assert.equal(after.period, null, 'a lifetime cap has no period');
      await s.services.data.saveRuntime(a.id, { downloaded_bytes: 2600 });
      assert.equal(json(await call('GET', '/clients/erin')).status, 'over_quota', 'over again 1000 bytes after the reset');

      // A periodic cap: the period starts at the reset.
      await ok('PATCH', '/clients/erin/limits', { reset_period: 'month' });
      const reset = await ok('POST', '/clients/erin/reset-usage');
      assert.equal(reset.status, 'idle');
      assert.ok(Date.parse(reset.period.start) > Date.now() - 5000, 'the period counts from the reset');
      assert.deepEqual([reset.period.uploaded_bytes, reset.period.downloaded_bytes], [0, 0]);
      assert.equal(await s.services.clients.limitsInForce(acmeId, 'erin').then((l) => l.downloaded_bytes), 1000);

      const audit = json(await call('GET', '/audit?action=client.reset_usage')).entries;
      assert.equal(audit.length, 2);
      assert.deepEqual(audit[0].target, { type: 'client', id: 'erin' });
      for (const action of ['client.update', 'client.limits_update', 'client.limits_delete']) {
        assert.ok(json(await call('GET', `/audit?action=${action}`)).entries.length > 0, action);
      }
    });

    test('named clients (?client_id=, repeatable): the same records as the whole list and one read each, periodic caps included', async () => {
      const x = await createSession(s.app, s.owner, { client_id: 'xena', reusable: true });
      await createSession(s.app, s.owner, { client_id: 'yuri' });
      await ok('PATCH', '/customer/limits/client', { downloaded_bytes: 5000, reset_period: 'month' });
      await ok('PATCH', '/clients/yuri/limits', { reset_period: 'week' });
      await s.services.data.saveRuntime(x.id, { downloaded_bytes: 6000, uploaded_bytes: 1 });
      const whole = json(await call('GET', '/clients')).clients as Array<{ client_id: string; status: string; period: unknown }>;
      const byId = new Map(whole.map((c) => [c.client_id, c]));
      assert.equal(byId.get('xena')!.status, 'over_quota', 'the month counts from its recorded base');
      const named = json(await call('GET', '/clients?client_id=yuri&client_id=xena&client_id=nobody&client_id=xena')).clients as typeof whole;
      assert.deepEqual(named, [byId.get('xena'), byId.get('yuri')], 'newest last_seen first, an unknown id left out, a repeated one once');
      for (const c of named) assert.deepEqual(json(await call('GET', `/clients/${c.client_id}`)), c, 'as one client reads');
      assert.deepEqual(json(await call('GET', '/clients?client_id=alice')).clients, [byId.get('alice')], 'one id');
      assert.deepEqual(json(await call('GET', '/clients?client_id=xena&client_id=yuri&status=over_quota')).clients.map((c: { client_id: string }) => c.client_id), ['xena']);
      assert.deepEqual(json(await call('GET', '/clients?client_id=xena', undefined, s.other)), { clients: [] }, 'another customer\'s xena is not this one');
      assertError(await call('GET', '/clients?client_id=bad%20id'), 400, 'invalid_request');
      assertError(await call('GET', `/clients?${Array.from({ length: 101 }, (_, i) => `client_id=c${i}`).join('&')}`), 400, 'invalid_request');
      assert.equal((await call('DELETE', '/customer/limits/client')).statusCode, 204);
    });
  });
}

suite('sqlite');
suite('postgres');
