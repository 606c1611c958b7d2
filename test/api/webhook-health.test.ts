// Webhook endpoints that keep failing, end to end on loopback (a local node:http receiver, real
// API calls, SQLite and PostgreSQL): a destination the egress policy refuses fails at once, with a
// generic reason (the refused address only in the server log) and without holding the session's
// ordered queue; the pending deliveries of an endpoint are capped (oldest dropped and counted);
// an endpoint is disabled after N failed attempts in a row or T of failing, which the API shows,
// the audit trail records and the customer's other endpoints hear of (webhook_disabled).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { createLogger } from '../../server/log.ts';
import type { WebhookOptions } from '../../server/webhooks/service.ts';
import type { EgressPolicy } from '../../server/dataplane/egress.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, until as untilValue } from '../helpers/server.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';

type Got = { type: string; data: Record<string, unknown> };

/** A receiver answering `status` to every POST, keeping what it got. */
async function receiver(status: number): Promise<{ url: string; got: Got[]; close(): Promise<void> }> {
  const got: Got[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const j = JSON.parse(body) as Got;
      got.push({ type: j.type, data: j.data });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook/T0/secret-path?token=abc`,
    got,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const until = <T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, ms = 15_000) => untilValue(what, fn, ms);

const KEY = randomBytes(32);

function suite(kind: 'sqlite' | 'postgres') {
  describe(`webhook health on ${kind}`, () => {
    let pg: PgServer | undefined;
    let n = 0;
    before(async () => {
      if (kind === 'postgres') pg = await startPostgres();
    });
    after(async () => {
      await pg?.destroy();
    });

    /** A server of its own (own folder, own database) with these sender options and egress policy. */
    async function start(hooks: WebhookOptions, egress: EgressPolicy | undefined) {
      const dir = tempDir('vad-whh-');
      const lines: string[] = [];
      const database = pg ? await pg.createDatabase(`whh_${++n}`) : undefined;
      const srv: RunningServer = await startServer({
        dataDir: dir,
        ...(database ? { database } : {}),
        port: 0,
        vlessTcpPort: null,
        proxyPort: null,
        ...(egress ? { egress } : {}),
        rateLimit: { max: 100_000, windowMs: 60_000 },
        logger: createLogger({ level: 'debug', write: (l) => lines.push(l) }),
        webhooks: { pollMs: 50, timeoutMs: 3000, ...(kind === 'sqlite' ? { key: KEY } : {}), ...hooks },
      });
      const owner = srv.ownerToken ?? (await srv.services.data.createToken('default', 'owner')).token;
      const api = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
      return { srv, api, lines, close: async () => { await srv.close(); removeDir(dir); } };
    }

    test('a destination the egress policy refuses: failed at once, a generic reason, the address in the log only, the queue not held', async () => {
      const recv = await receiver(200);
      // Long retry delays: a refused delivery that were retried would hold its session's queue for minutes.
      const s = await start({ baseDelayMs: 60_000, maxDelayMs: 60_000, maxAttempts: 10 }, undefined);
      try {
        const hook = (await s.api('POST', '/webhooks', { url: recv.url, events: ['session_paused', 'session_resumed'] })).json;
        const session = (await s.api('POST', '/sessions', { client_id: 'whh-refused', zone: 'de-fra', reusable: true })).json as { id: string };
        for (let i = 0; i < 3; i++) {
          assert.equal((await s.api('PATCH', `/sessions/${session.id}/pause`)).status, 200);
          assert.equal((await s.api('PATCH', `/sessions/${session.id}/resume`)).status, 200);
        }
        const deliveries = await until('six deliveries failed', async () => {
          const d = (await s.api('GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries as { status: string; attempts: number; error: string; next_attempt_at: string | null }[];
          return d.length === 6 && d.every((x) => x.status === 'failed') ? d : undefined;
        });
        for (const d of deliveries) {
          assert.equal(d.attempts, 1, 'not retried');
          assert.equal(d.error, "destination refused by the server's egress policy");
          assert.equal(d.next_attempt_at, null);
        }
        assert.equal(recv.got.length, 0, 'nothing reached the loopback receiver');
        // The owner learns nothing of what the name resolved to; the server log has it.
        const shown = JSON.stringify([deliveries, (await s.api('GET', `/webhooks/${hook.id}`)).json.disabled_reason]);
        assert.ok(!shown.includes('127.0.0.1') && !/not allowed/.test(shown), shown);
        assert.ok(s.lines.some((l) => l.includes('egress policy') && l.includes('127.0.0.1')), 'the refused address is in the server log');
        const endpoint = (await s.api('GET', `/webhooks/${hook.id}`)).json;
        assert.equal(endpoint.consecutive_failures, 6);
        assert.equal(typeof endpoint.failing_since, 'string');
        assert.equal(endpoint.enabled, true);
      } finally {
        await s.close();
        await recv.close();
      }
    });

    test('pending deliveries are capped per endpoint: the oldest dropped and counted', async () => {
      const recv = await receiver(500);
      const s = await start({ baseDelayMs: 60_000, maxDelayMs: 60_000, maxPendingPerEndpoint: 5 }, 'allow-all');
      try {
        const hook = (await s.api('POST', '/webhooks', { url: recv.url, events: ['limits_changed'] })).json;
        assert.equal(hook.dropped, 0);
        for (let i = 0; i < 20; i++) assert.equal((await s.api('PATCH', '/customer/limits/global', { uploaded_bytes: 1000 + i })).status, 200);
        const endpoint = (await s.api('GET', `/webhooks/${hook.id}`)).json;
        assert.equal(endpoint.dropped, 15, 'twenty queued, five kept');
        const deliveries = (await s.api('GET', `/webhooks/${hook.id}/deliveries?limit=200`)).json.deliveries as { status: string }[];
        assert.ok(deliveries.filter((d) => d.status === 'pending').length <= 5, JSON.stringify(deliveries.map((d) => d.status)));
        assert.equal(deliveries.length, 5, 'the dropped ones are gone');
        // The newest are the ones kept.
        assert.ok((await s.api('GET', '/webhooks')).json.webhooks.some((w: { id: string; dropped: number }) => w.id === hook.id && w.dropped === 15));
      } finally {
        await s.close();
        await recv.close();
      }
    });

    test('N failed attempts in a row disable the endpoint: shown in the API, audited, announced to the other endpoints', async () => {
      const dead = await receiver(500);
      const watcher = await receiver(200);
      const s = await start({ baseDelayMs: 50, maxDelayMs: 100, maxAttempts: 10, disableAfterFailures: 3 }, 'allow-all');
      try {
        const hook = (await s.api('POST', '/webhooks', { url: dead.url, events: ['limits_changed'] })).json;
        const other = (await s.api('POST', '/webhooks', { url: watcher.url, events: ['webhook_disabled'] })).json;
        assert.equal((await s.api('PATCH', '/customer/limits/global', { uploaded_bytes: 1 })).status, 200);
        assert.equal((await s.api('PATCH', '/customer/limits/global', { uploaded_bytes: 2 })).status, 200);
        const endpoint = await until('the endpoint disabled', async () => {
          const w = (await s.api('GET', `/webhooks/${hook.id}`)).json;
          return w.enabled === false ? w : undefined;
        });
        assert.equal(endpoint.disabled_reason, '3 delivery attempts failed in a row');
        assert.equal(endpoint.consecutive_failures, 3);
        assert.equal(typeof endpoint.failing_since, 'string');
        assert.equal(typeof endpoint.disabled_at, 'string');
        assert.ok(Date.parse(endpoint.failing_since) <= Date.parse(endpoint.disabled_at));
        // Nothing of it is left pending, and nothing more is tried.
        const deliveries = (await s.api('GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries as { status: string; error: string }[];
        assert.ok(deliveries.every((d) => d.status === 'failed'), JSON.stringify(deliveries));
        const tried = dead.got.length;
        assert.equal(tried, 3);
        await new Promise((r) => setTimeout(r, 400));
        assert.equal(dead.got.length, tried);
        // The other endpoint hears of it, the URL masked.
        const told = await until('webhook_disabled delivered', () => watcher.got.find((g) => g.type === 'webhook_disabled'));
        assert.equal(told.data.webhook_id, hook.id);
        assert.equal(told.data.url, `http://127.0.0.1:${new URL(dead.url).port}/***`);
        assert.equal(told.data.reason, '3 delivery attempts failed in a row');
        assert.equal(dead.got.filter((g) => g.type === 'webhook_disabled').length, 0, 'not to the disabled endpoint');
        // The audit trail records it, by the server.
        const audit = (await s.api('GET', '/audit?action=webhook.disable')).json.entries as { actor: { role: string; token_id: null }; target: { id: string }; after: Record<string, unknown> }[];
        assert.equal(audit.length, 1);
        assert.deepEqual(audit[0]!.actor, { token_id: null, role: 'server' });
        assert.equal(audit[0]!.target.id, hook.id);
        assert.equal(audit[0]!.after.enabled, false);
        assert.equal(audit[0]!.after.disabled_reason, '3 delivery attempts failed in a row');
        assert.ok(!JSON.stringify(audit).includes('secret-path'));
        // Enabled again by the owner: a fresh count.
        const again = (await s.api('PATCH', `/webhooks/${hook.id}`, { enabled: true })).json;
        assert.equal(again.enabled, true);
        assert.equal(again.disabled_reason, null);
        assert.equal(again.disabled_at, null);
        assert.equal(again.consecutive_failures, 0);
        assert.equal(again.failing_since, null);
        await s.api('DELETE', `/webhooks/${other.id}`);
      } finally {
        await s.close();
        await dead.close();
        await watcher.close();
      }
    });

    test('failing for longer than T disables the endpoint', async () => {
      const dead = await receiver(503);
      const s = await start({ baseDelayMs: 100, maxDelayMs: 100, maxAttempts: 100, disableAfterFailures: 1000, disableAfterMs: 600 }, 'allow-all');
      try {
        const hook = (await s.api('POST', '/webhooks', { url: dead.url, events: ['limits_changed'] })).json;
        assert.equal((await s.api('PATCH', '/customer/limits/global', { uploaded_bytes: 1 })).status, 200);
        const endpoint = await until('the endpoint disabled', async () => {
          const w = (await s.api('GET', `/webhooks/${hook.id}`)).json;
          return w.enabled === false ? w : undefined;
        });
        assert.match(endpoint.disabled_reason, /^deliveries failed for \d+ s without a success$/);
        assert.ok(endpoint.consecutive_failures >= 2 && endpoint.consecutive_failures < 1000);
        assert.ok(Date.parse(endpoint.disabled_at) - Date.parse(endpoint.failing_since) >= 600);
      } finally {
        await s.close();
        await dead.close();
      }
    });

    if (kind === 'sqlite') {
      test('errors stored before the generic reasons are shown without their addresses', async () => {
        const recv = await receiver(200);
        const s = await start({}, 'allow-all');
        try {
          const hook = (await s.api('POST', '/webhooks', { url: recv.url, events: ['limits_changed'] })).json;
          await s.api('PATCH', '/customer/limits/global', { uploaded_bytes: 1 });
          await until('delivered', () => recv.got.length > 0);
          const db = s.srv.services.sqlite!.store.db;
          const seqs = (db.prepare('SELECT seq FROM webhook_deliveries ORDER BY seq').all() as { seq: number }[]).map((r) => r.seq);
          db.prepare('UPDATE webhook_deliveries SET last_error = ? WHERE seq = ?').run('egress refused: destination not allowed: 10.1.2.3', seqs[0]!);
          await s.api('PATCH', '/customer/limits/global', { uploaded_bytes: 2 });
          await until('delivered twice', () => recv.got.length > 1);
          db.prepare('UPDATE webhook_deliveries SET last_error = ? WHERE seq = ?').run('ECONNREFUSED: connect ECONNREFUSED 10.9.8.7:443', seqs[0]! + 1);
          const errors = ((await s.api('GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries as { error: string }[]).map((d) => d.error).sort();
          assert.deepEqual(errors, ["ECONNREFUSED: the connection failed", "destination refused by the server's egress policy"]);
        } finally {
          await s.close();
          await recv.close();
        }
      });
    }
  });
}

suite('sqlite');
suite('postgres');
