// "Send test" and the endpoint's health as the API shows it, end to end on loopback (a local
// node:http receiver, real API calls; SQLite and PostgreSQL): POST /v2/webhooks/{id}/test sends
// one signed `test` delivery at once with the headers of every delivery and answers what came
// back (2xx, an HTTP error, a refused connection, a timeout, the egress policy's refusal), is not
// queued nor counted in the endpoint's health, is audited, owner only, 404 for an unknown id; a
// failed real delivery shows as the endpoint's last error, its time and its next retry.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { verifySignature } from '../../server/webhooks/secret.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, until } from '../helpers/server.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';

type Got = { headers: IncomingHttpHeaders; body: string };

/** A receiver answering `status` to every POST (or nothing at all with `hang`), keeping what it got. */
async function receiver(status: number, hang = false): Promise<{ url: string; got: Got[]; close(): Promise<void> }> {
  const got: Got[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      if (!hang) res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook/secret-path`,
    got,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A loopback port nothing listens on. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const KEY = randomBytes(32);
const TIMEOUT_MS = 1000;

function suite(kind: 'sqlite' | 'postgres') {
  describe(`webhook test deliveries on ${kind}`, () => {
    let pg: PgServer | undefined;
    let n = 0;
    const open: { close(): Promise<void> }[] = [];
    before(async () => {
      if (kind === 'postgres') pg = await startPostgres();
    });
    after(async () => {
      for (const o of open.reverse()) await o.close();
      await pg?.destroy();
    });

    /** A server of its own (own folder, own database); `strict`: the default egress policy (no loopback). */
    async function start(strict = false) {
      const dir = tempDir('vad-wht-');
      const database = pg ? await pg.createDatabase(`wht_${++n}`) : undefined;
      const srv: RunningServer = await startServer({
        dataDir: dir,
        ...(database ? { database } : {}),
        port: 0,
        vlessTcpPort: null,
        proxyPort: null,
        ...(strict ? {} : { egress: 'allow-all' as const }),
        rateLimit: { max: 100_000, windowMs: 60_000 },
        webhooks: { pollMs: 50, timeoutMs: TIMEOUT_MS, baseDelayMs: 60_000, maxDelayMs: 60_000, ...(kind === 'sqlite' ? { key: KEY } : {}) },
      });
      const owner = srv.ownerToken ?? (await srv.services.data.createToken('default', 'owner')).token;
      const api = (method: string, path: string, body?: unknown, token = owner) => callApi(srv.baseUrl, token, method, path, body);
      const s = { srv, api, close: async () => { await srv.close(); removeDir(dir); } };
      open.push(s);
      return s;
    }

    test('a test delivery: signed like every delivery, its answer told, not queued, not counted, audited', async () => {
      const s = await start();
      const recv = await receiver(200);
      open.push(recv);
      const hook = (await s.api('POST', '/webhooks', { url: recv.url, events: ['limits_changed'] })).json;
      const r = await s.api('POST', `/webhooks/${hook.id}/test`);
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.json).sort(), ['delivered', 'duration_ms', 'error', 'status_code']);
      assert.equal(r.json.delivered, true);
      assert.equal(r.json.status_code, 200);
      assert.equal(r.json.error, null);
      assert.ok(Number.isInteger(r.json.duration_ms) && r.json.duration_ms >= 0 && r.json.duration_ms < TIMEOUT_MS);
      assert.equal(recv.got.length, 1, 'sent at once, before the answer');
      const got = recv.got[0]!;
      const body = JSON.parse(got.body) as { id: string; type: string; data: { webhook_id: string } };
      assert.equal(body.type, 'test');
      assert.equal(body.data.webhook_id, hook.id);
      assert.equal(got.headers['x-vad-event'], 'test');
      assert.equal(got.headers['x-vad-delivery'], body.id);
      assert.equal(got.headers['user-agent'], 'vpn-access-webhooks/1');
      assert.ok(verifySignature(hook.secret, String(got.headers['x-vad-signature']), got.body, Math.floor(Date.now() / 1000)), 'signed with the endpoint\'s secret');
      // Not in the outbox, nothing retried, the endpoint's health untouched.
      assert.deepEqual((await s.api('GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries, []);
      // Audited, the URL masked.
      const audit = (await s.api('GET', '/audit?action=webhook.test')).json.entries as { target: { id: string }; after: Record<string, unknown> }[];
      assert.equal(audit.length, 1);
      assert.equal(audit[0]!.target.id, hook.id);
      assert.equal(audit[0]!.after.delivered, true);
      assert.equal(audit[0]!.after.status_code, 200);
      assert.ok(!JSON.stringify(audit).includes('secret-path'));
      // A disabled (turned off) endpoint can still be tested.
      await s.api('PATCH', `/webhooks/${hook.id}`, { enabled: false });
      assert.equal((await s.api('POST', `/webhooks/${hook.id}/test`)).json.delivered, true);
      assert.equal(recv.got.length, 2);
    });

    test('failures: an HTTP error, a refused connection, a timeout; none counted in the health', async () => {
      const s = await start();
      const bad = await receiver(500);
      const hanging = await receiver(200, true);
      open.push(bad, hanging);
      const port = await deadPort();
      const make = async (url: string) => (await s.api('POST', '/webhooks', { url, events: ['limits_changed'] })).json.id as string;
      const http500 = (await s.api('POST', `/webhooks/${await make(bad.url)}/test`)).json;
      assert.deepEqual({ ...http500, duration_ms: 0 }, { delivered: false, status_code: 500, error: 'HTTP 500', duration_ms: 0 });
      const refusedId = await make(`http://127.0.0.1:${port}/hook`);
      const refused = (await s.api('POST', `/webhooks/${refusedId}/test`)).json;
      assert.deepEqual({ ...refused, duration_ms: 0 }, { delivered: false, status_code: null, error: 'ECONNREFUSED: connection refused', duration_ms: 0 });
      const slow = (await s.api('POST', `/webhooks/${await make(hanging.url)}/test`)).json;
      assert.equal(slow.delivered, false);
      assert.equal(slow.status_code, null);
      assert.equal(slow.error, `timed out after ${TIMEOUT_MS} ms`);
      assert.ok(slow.duration_ms >= TIMEOUT_MS - 20, `${slow.duration_ms} ms`);
      const endpoint = (await s.api('GET', `/webhooks/${refusedId}`)).json;
      assert.deepEqual([endpoint.consecutive_failures, endpoint.failing_since, endpoint.last_error, endpoint.enabled], [0, null, null, true], 'a test is not counted');
    });

    test('owner only; an unknown id, or another customer\'s, is 404', async () => {
      const s = await start();
      const recv = await receiver(200);
      open.push(recv);
      const hook = (await s.api('POST', '/webhooks', { url: recv.url, events: ['limits_changed'] })).json;
      const agent = (await s.srv.services.data.createToken('default', 'agent')).token;
      const refused = await s.api('POST', `/webhooks/${hook.id}/test`, undefined, agent);
      assert.equal(refused.status, 403);
      assert.equal(refused.json.error.code, 'forbidden');
      assert.equal(refused.json.error.details.resource, 'webhooks');
      const unknown = await s.api('POST', '/webhooks/no-such-hook/test');
      assert.equal(unknown.status, 404);
      assert.deepEqual([unknown.json.error.code, unknown.json.error.details.resource], ['not_found', 'webhook']);
      assert.equal(typeof unknown.json.error.message, 'string');
      const other = (await s.srv.services.data.createToken('globex', 'owner')).token;
      assert.equal((await s.api('POST', `/webhooks/${hook.id}/test`, undefined, other)).status, 404);
      assert.equal(recv.got.length, 0, 'nothing was sent');
      // Documented as an extension.
      const doc = (await s.api('GET', '/openapi.json')).json;
      assert.equal(doc.paths['/v2/webhooks/{id}/test'].post['x-extension'], true);
    });

    test('the egress policy holds for tests: no loopback unless the server allows it', async () => {
      const s = await start(true);
      const recv = await receiver(200);
      open.push(recv);
      const hook = (await s.api('POST', '/webhooks', { url: recv.url, events: ['limits_changed'] })).json;
      const r = (await s.api('POST', `/webhooks/${hook.id}/test`)).json;
      assert.deepEqual([r.delivered, r.status_code, r.error], [false, null, "destination refused by the server's egress policy"]);
      const byName = (await s.api('POST', '/webhooks', { url: recv.url.replace('127.0.0.1', 'localhost'), events: ['limits_changed'] })).json;
      assert.equal((await s.api('POST', `/webhooks/${byName.id}/test`)).json.error, "destination refused by the server's egress policy");
      assert.equal(recv.got.length, 0, 'nothing reached the loopback receiver');
    });

    test('a failed real delivery: the endpoint shows its last error, when, and its next retry', async () => {
      const s = await start();
      const bad = await receiver(503);
      open.push(bad);
      const hook = (await s.api('POST', '/webhooks', { url: bad.url, events: ['limits_changed'] })).json;
      assert.deepEqual([hook.last_error, hook.last_error_at, hook.next_retry_at], [null, null, null]);
      const t0 = Date.now();
      await s.api('PATCH', '/customer/limits/global', { uploaded_bytes: 1 });
      const w = await until('the failure recorded', async () => {
        const x = (await s.api('GET', `/webhooks/${hook.id}`)).json;
        return x.last_error && x.next_retry_at ? x : undefined;
      }, 15_000);
      assert.equal(w.last_error, 'HTTP 503');
      assert.ok(Date.parse(w.last_error_at) >= t0 - 1000 && Date.parse(w.last_error_at) <= Date.now());
      assert.ok(Date.parse(w.next_retry_at) > Date.now() + 30_000, 'the retry is a minute away');
      assert.equal(w.consecutive_failures, 1);
      const listed = (await s.api('GET', '/webhooks')).json.webhooks.find((x: { id: string }) => x.id === hook.id);
      assert.equal(listed.next_retry_at, w.next_retry_at);
    });
  });
}

suite('sqlite');
suite('postgres');
