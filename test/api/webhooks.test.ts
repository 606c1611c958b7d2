// Webhooks end to end: endpoints through the API, deliveries received by a local
// HTTP server (node:http on 127.0.0.1) with their signatures verified, triggered by real session
// traffic through the data plane (a raw VLESS connection to a loopback echo), retried with
// backoff after 500s in per-session order, kept across a restart of the service (nothing lost,
// no delivery id that was not already sent before), refused by the default egress policy for
// loopback; on SQLite and on PostgreSQL, where two instances share the outbox and each
// delivery is sent by one of them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { lookup } from 'node:dns/promises';
import { join } from 'node:path';
import { startServer, type RunningServer, type StartOptions } from '../../server/serve.ts';
import { verifySignature } from '../../server/webhooks/secret.ts';
import type { WebhookService } from '../../server/webhooks/service.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, until as untilValue } from '../helpers/server.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { openVlessEcho, startTcpEcho } from '../dataplane/helpers/targets.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; created_at: string; data: Record<string, unknown> };
  answered: number;
  /** When it arrived (ms). */
  at: number;
}

/** A webhook receiver: records every request, answers what `answer()` says (200 by default). */
async function startReceiver(host = '127.0.0.1'): Promise<{ url: string; got: Received[]; answer: (r: Received, n: number) => number; close(): Promise<void>; server: Server }> {
  const got: Received[] = [];
  const recv = {
    url: '',
    got,
    answer: (_r: Received, _n: number) => 200,
    server: undefined as unknown as Server,
    close: () => new Promise<void>((r) => { recv.server.closeAllConnections(); recv.server.close(() => r()); }),
  };
  recv.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body, json: JSON.parse(body), answered: 0, at: Date.now() };
      r.answered = recv.answer(r, got.length);
      got.push(r);
      res.writeHead(r.answered, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => recv.server.listen(0, host, () => r()));
  recv.url = `http://${host.includes(':') ? `[${host}]` : host}:${(recv.server.address() as { port: number }).port}/hook`;
  return recv;
}

const until = <T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, ms = 20_000) => untilValue(what, fn, ms);

const FAST = { pollMs: 50, baseDelayMs: 100, maxDelayMs: 400, timeoutMs: 3000 };
const KEY = randomBytes(32);

function suite(kind: 'sqlite' | 'postgres') {
  describe(`webhooks on ${kind}`, () => {
    let pg: PgServer | undefined;
    let database: string | undefined;
    let dir: string;
    let srv: RunningServer;
    let owner: string;
    let echo: Awaited<ReturnType<typeof startTcpEcho>>;
    const opts = (extra: Partial<StartOptions> = {}): StartOptions => ({
      dataDir: dir,
      ...(database ? { database } : {}),
      port: 0,
      vlessTcpPort: 0,
      proxyPort: null,
      statsIntervalMs: 200,
      heartbeatIntervalMs: 60_000,
      egress: 'allow-all',
      // On PostgreSQL the instances share the cluster's key from the database (no key given).
      webhooks: kind === 'postgres' ? { ...FAST } : { ...FAST, key: KEY },
      ...extra,
    });
    const api = (method: string, path: string, body?: unknown, token = owner) => callApi(srv.baseUrl, token, method, path, body);

    before(async () => {
      if (kind === 'postgres') {
        pg = await startPostgres();
        database = pg.url();
      }
      dir = tempDir('vad-wh-');
      echo = await startTcpEcho();
      srv = await startServer(opts());
      owner = srv.ownerToken ?? (await srv.services.data.createToken('default', 'owner')).token;
    });
    after(async () => {
      await srv?.close();
      await echo?.close();
      await pg?.destroy();
      removeDir(dir);
    });

    test('endpoints: create shows the secret once, list/get/patch/delete, owner only, URL checks', async () => {
      const recv = await startReceiver();
      try {
        const created = await api('POST', '/webhooks', { url: recv.url, events: ['session_start'] });
        assert.equal(created.status, 201);
        assert.match(created.json.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
        assert.equal(created.json.secret_prefix, created.json.secret.slice(0, 10));
        const id = created.json.id as string;
        const got = await api('GET', `/webhooks/${id}`);
        assert.equal(got.status, 200);
        assert.equal(got.json.secret, undefined, 'the secret is shown only once');
        assert.deepEqual(got.json.events, ['session_start']);
        assert.ok((await api('GET', '/webhooks')).json.webhooks.some((w: { id: string }) => w.id === id));
        const patched = await api('PATCH', `/webhooks/${id}`, { events: ['session_end', 'limits_changed'], enabled: false });
        assert.equal(patched.status, 200);
        assert.deepEqual(patched.json.events, ['session_end', 'limits_changed']);
        assert.equal(patched.json.enabled, false);

        // Bad input: clear 400s in the error format.
        for (const [body, what] of [
          [{ url: 'ftp://example.com/x', events: ['session_end'] }, 'scheme'],
          [{ url: 'not a url', events: ['session_end'] }, 'absolute'],
          [{ url: 'http://user:pw@example.com/', events: ['session_end'] }, 'password'],
          [{ url: 'https://example.com/', events: [] }, ''],
          [{ url: 'https://example.com/', events: ['nope'] }, ''],
          [{ url: 'https://example.com/', events: ['session_end'], secret: 'short' }, ''],
          [{ url: 'https://example.com/', events: ['session_end'], extra: 1 }, ''],
        ] as const) {
          const r = await api('POST', '/webhooks', body);
          assert.equal(r.status, 400, JSON.stringify(body));
          assert.equal(r.json.error.code, 'invalid_request');
          assert.equal(typeof r.json.error.details, 'object');
          if (what) assert.match(r.json.error.message, new RegExp(what));
        }
        assert.equal((await api('PATCH', `/webhooks/${id}`, { url: 'gopher://x' })).status, 400);
        assert.equal((await api('PATCH', `/webhooks/${id}`, {})).status, 400);

        // Agents are refused; another customer sees nothing.
        const agent = (await srv.services.data.createToken('default', 'agent')).token;
        for (const [m, p, b] of [['GET', '/webhooks'], ['POST', '/webhooks', { url: recv.url, events: ['session_end'] }], ['GET', `/webhooks/${id}`], ['DELETE', `/webhooks/${id}`]] as const) {
          const refused = await api(m, p, b, agent);
          assert.equal(refused.status, 403, `${m} ${p}`);
          assert.equal(refused.json.error.code, 'forbidden');
          // The 403 names the resource of the route, not another one.
          assert.equal(refused.json.error.message, 'This token may not manage webhooks; an owner token is required.');
          assert.equal(refused.json.error.details.resource, 'webhooks');
        }
        const limitsRefused = await api('GET', '/customer/limits/global', undefined, agent);
        assert.equal(limitsRefused.json.error.message, 'This token may not manage limits; an owner token is required.');
        const other = (await srv.services.data.createToken('globex', 'owner')).token;
        assert.deepEqual((await api('GET', '/webhooks', undefined, other)).json.webhooks, []);
        const hidden = await api('GET', `/webhooks/${id}`, undefined, other);
        assert.equal(hidden.status, 404);
        assert.equal(hidden.json.error.code, 'not_found');
        assert.equal(hidden.json.error.details.resource, 'webhook');

        // The secret is not in the database in plain text (SQLite: the files of the data folder).
        if (kind === 'sqlite') {
          for (const f of readdirSync(dir).filter((n) => n.startsWith('vpn-access.db'))) {
            assert.ok(!readFileSync(join(dir, f)).includes(created.json.secret), `${f} holds the secret`);
          }
        } else {
          const { default: pgmod } = await import('pg');
          const c = new pgmod.Client({ connectionString: database });
          await c.connect();
          const rows = (await c.query('SELECT secret_enc FROM webhooks')).rows as { secret_enc: string }[];
          await c.end();
          assert.ok(rows.length > 0 && rows.every((r) => !r.secret_enc.includes(created.json.secret)));
        }

        assert.equal((await api('DELETE', `/webhooks/${id}`)).status, 204);
        assert.equal((await api('GET', `/webhooks/${id}`)).status, 404);
        assert.equal((await api('DELETE', `/webhooks/${id}`)).status, 404);
      } finally {
        await recv.close();
      }
    });

    test('real session traffic: signed deliveries, 500s retried with backoff, order kept per session', async () => {
      const recv = await startReceiver();
      let hookId = '';
      try {
        // The first two requests fail: the first delivery is retried and nothing behind it overtakes it.
        recv.answer = (_r, n) => (n < 2 ? 500 : 200);
        const hook = (await api('POST', '/webhooks', { url: recv.url, events: ['session_start', 'session_stats', 'session_end'] })).json;
        hookId = hook.id;
        const session = (await api('POST', '/sessions', { client_id: 'wh-client', zone: 'de-fra' })).json as { id: string };
        const conn = await openVlessEcho(srv.vlessTcpPort!, session.id, echo.port);
        assert.equal(conn.got(), 4, 'relayed');
        await new Promise((r) => setTimeout(r, 300));
        conn.s.end();
        await conn.closed;

        const mine = () => recv.got.filter((r) => r.json.data.session_id === session.id);
        await until('session_end delivered', () => mine().some((r) => r.json.type === 'session_end' && r.answered === 200));
        for (const r of mine()) {
          assert.ok(verifySignature(hook.secret, String(r.headers['x-vad-signature']), r.body, Math.floor(Date.now() / 1000)), 'signature verifies');
          assert.ok(!verifySignature('whsec_wrong-secret-0000000000', String(r.headers['x-vad-signature']), r.body, Math.floor(Date.now() / 1000)));
          assert.equal(r.headers['x-vad-delivery'], r.json.id);
          assert.equal(r.headers['x-vad-event'], r.json.type);
        }
        // The first delivery was tried three times under one id, and answered last.
        const attempts = mine().filter((r) => r.json.id === mine()[0]!.json.id);
        assert.deepEqual(attempts.map((r) => r.answered), [500, 500, 200]);
        assert.equal(mine()[0]!.json.type, 'session_start');
        // Successful deliveries: in event order, each id once.
        const ok = mine().filter((r) => r.answered === 200);
        assert.equal(new Set(ok.map((r) => r.json.id)).size, ok.length);
        const eventIds = ok.map((r) => r.json.data.event_id as number);
        assert.deepEqual(eventIds, [...eventIds].sort((a, b) => a - b), 'in event order');
        assert.equal(ok.at(-1)!.json.type, 'session_end');
        assert.ok(ok.some((r) => r.json.type === 'session_stats'));
        // Backoff: the retries were spaced by at least the base delay (100 ms), then twice it
        // (lower bounds only: a loaded machine can only make them later).
        assert.ok(attempts[1]!.at - attempts[0]!.at >= 90, `first retry after ${attempts[1]!.at - attempts[0]!.at} ms`);
        assert.ok(attempts[2]!.at - attempts[1]!.at >= 190, `second retry after ${attempts[2]!.at - attempts[1]!.at} ms`);
        // The deliveries API shows the answers.
        const deliveries = (await api('GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries as { id: string; status: string; attempts: number; response_status: number; event: string }[];
        const first = deliveries.find((d) => d.id === attempts[0]!.json.id)!;
        assert.equal(first.status, 'delivered');
        assert.equal(first.attempts, 3);
        assert.equal(first.response_status, 200);
        assert.ok(deliveries.every((d) => d.status === 'delivered'));
      } finally {
        await api('DELETE', '/webhooks/' + hookId);
        await recv.close();
      }
    });

    test('a restart mid-retry loses nothing and sends no new id for an old delivery', async () => {
      const recv = await startReceiver();
      let hookId = '';
      try {
        recv.answer = () => 500;
        const hook = (await api('POST', '/webhooks', { url: recv.url, events: ['limits_changed', 'session_paused', 'session_resumed'] })).json;
        hookId = hook.id;
        const session = (await api('POST', '/sessions', { client_id: 'wh-restart', zone: 'de-fra', reusable: true })).json as { id: string };
        assert.equal((await api('PATCH', '/customer/limits/global', { uploaded_bytes: 1_000_000 })).status, 200);
        assert.equal((await api('PATCH', `/sessions/${session.id}/pause`)).status, 200);
        assert.equal((await api('PATCH', `/sessions/${session.id}/resume`)).status, 200);
        assert.equal((await api('DELETE', '/customer/limits/global')).status, 204);
        await until('a first failed attempt', () => recv.got.length >= 1);
        await srv.close();
        const before = recv.got.map((r) => r.json.id);
        recv.answer = () => 200;
        srv = await startServer(opts());
        const ok = () => recv.got.filter((r) => r.answered === 200);
        await until('four deliveries after the restart', () => ok().length >= 4);
        await new Promise((r) => setTimeout(r, 500));
        const delivered = ok();
        assert.equal(delivered.length, 4, 'each delivered once');
        assert.equal(new Set(delivered.map((r) => r.json.id)).size, 4);
        // The session's deliveries in order; every id tried before the restart is among those delivered.
        assert.deepEqual(delivered.filter((r) => r.json.type.startsWith('session_')).map((r) => r.json.type), ['session_paused', 'session_resumed']);
        for (const id of before) assert.ok(delivered.some((r) => r.json.id === id), 'an id tried before the restart is delivered under the same id');
        for (const r of delivered) assert.ok(verifySignature(hook.secret, String(r.headers['x-vad-signature']), r.body, Math.floor(Date.now() / 1000)));
        const limits = delivered.filter((r) => r.json.type === 'limits_changed').map((r) => r.json.data.action);
        assert.deepEqual(limits, ['updated', 'deleted']);
        // Retention: finished deliveries older than the cut are pruned, pending ones never.
        const store = (srv.services.webhooks as unknown as WebhookService).store;
        assert.equal(await store.prune('2000-01-01T00:00:00.000Z', 100), 0);
        assert.equal(await store.prune('2999-01-01T00:00:00.000Z', 100), 4);
        assert.deepEqual((await api('GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries, []);
      } finally {
        await api('DELETE', '/webhooks/' + hookId);
        await recv.close();
      }
    });

    test('a host name is resolved and the checked address dialled', async () => {
      // Listen where `localhost` resolves here (127.0.0.1 or ::1: loopback either way).
      const { address } = await lookup('localhost', { verbatim: true });
      const recv = await startReceiver(address);
      let hookId = '';
      try {
        const hook = (await api('POST', '/webhooks', { url: recv.url.replace(address.includes(':') ? `[${address}]` : address, 'localhost'), events: ['limits_changed'] })).json;
        hookId = hook.id;
        assert.match(hook.url, /^http:\/\/localhost:/);
        await api('PATCH', '/customer/limits/global', { uploaded_bytes: 77 });
        const r = await until('a delivery by host name', () => recv.got[0]);
        assert.ok(verifySignature(hook.secret, String(r.headers['x-vad-signature']), r.body, Math.floor(Date.now() / 1000)));
        assert.equal(r.json.type, 'limits_changed');
        await api('DELETE', '/customer/limits/global');
      } finally {
        await api('DELETE', '/webhooks/' + hookId);
        await recv.close();
      }
    });

    test('the default egress policy refuses loopback destinations', async () => {
      const recv = await startReceiver();
      const dir2 = tempDir('vad-wh-egress-');
      // Its own database on PostgreSQL: the allow-all instance above would otherwise send from the same outbox.
      const own = pg ? { database: await pg.createDatabase('strict_egress') } : {};
      const strict = await startServer({ ...opts({ dataDir: dir2, egress: undefined, vlessTcpPort: null, webhooks: kind === 'postgres' ? { ...FAST, maxAttempts: 2 } : { ...FAST, key: KEY, maxAttempts: 2 } }), ...own });
      try {
        const token = strict.ownerToken ?? (await strict.services.data.createToken('default', 'owner')).token;
        const call = (m: string, p: string, b?: unknown) => callApi(strict.baseUrl, token, m, p, b);
        const hook = (await call('POST', '/webhooks', { url: recv.url, events: ['limits_changed'] })).json;
        await call('PATCH', '/customer/limits/global', { uploaded_bytes: 5 });
        const failed = await until('the delivery marked failed', async () => {
          const d = (await call('GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries[0];
          return d?.status === 'failed' ? d : undefined;
        });
        assert.equal(failed.attempts, 1, 'a refusal is not retried');
        assert.equal(failed.response_status, null);
        assert.equal(failed.error, "destination refused by the server's egress policy");
        assert.equal(recv.got.length, 0, 'nothing reached the loopback receiver');
        // A host name is resolved, and the address it resolves to is checked (localhost: loopback).
        const byName = (await call('POST', '/webhooks', { url: recv.url.replace('127.0.0.1', 'localhost'), events: ['limits_changed'] })).json;
        await call('PATCH', '/customer/limits/global', { uploaded_bytes: 6 });
        const failedByName = await until('the delivery by name marked failed', async () => {
          const d = (await call('GET', `/webhooks/${byName.id}/deliveries`)).json.deliveries[0];
          return d?.status === 'failed' ? d : undefined;
        });
        assert.equal(failedByName.error, "destination refused by the server's egress policy", 'what localhost resolves to is not told');
        assert.equal(recv.got.length, 0);
        await call('DELETE', '/customer/limits/global');
      } finally {
        await strict.close();
        await recv.close();
        removeDir(dir2);
      }
    });

    if (kind === 'postgres') {
      test('two instances on one database: each delivery sent by exactly one', async () => {
        const recv = await startReceiver();
        const dir2 = tempDir('vad-wh-b-');
        const b = await startServer(opts({ dataDir: dir2, vlessTcpPort: null }));
        try {
          await api('POST', '/webhooks', { url: recv.url, events: ['limits_changed'] });
          for (let i = 0; i < 20; i++) {
            const via = i % 2 ? b : srv;
            assert.equal((await callApi(via.baseUrl, owner, 'PATCH', '/customer/limits/global', { uploaded_bytes: 1000 + i })).status, 200);
          }
          await until('20 deliveries', () => recv.got.length >= 20);
          await new Promise((r) => setTimeout(r, 800));
          assert.equal(recv.got.length, 20, 'no delivery sent twice');
          assert.equal(new Set(recv.got.map((r) => r.json.id)).size, 20);
          // One order key (the customer): in the order queued.
          assert.deepEqual(recv.got.map((r) => (r.json.data.limits as { uploaded_bytes: number }).uploaded_bytes), Array.from({ length: 20 }, (_, i) => 1000 + i));
        } finally {
          await b.close();
          await recv.close();
          removeDir(dir2);
        }
      });
    }
  });
}

suite('sqlite');
suite('postgres');
