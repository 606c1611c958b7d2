// Webhooks for a cap or an expiry reached: the data plane's cut of a live session by
// its expiry sends `expired`, a client byte cap reached sends `cap_reached` (with the session
// and the reason), signed, to a local receiver; real traffic through the VLESS data plane.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { verifySignature } from '../../server/webhooks/secret.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { openVlessEcho, startTcpEcho } from './helpers/targets.ts';

type Got = { type: string; data: { session_id: string; reason: string }; signature: string; body: string };
let srv: RunningServer;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
let receiver: Server;
let url: string;
let dir: string;
let owner: string;
const got: Got[] = [];

before(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const json = JSON.parse(body) as { type: string; data: Got['data'] };
      got.push({ type: json.type, data: json.data, signature: String(req.headers['x-vad-signature']), body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  dir = tempDir('vad-capwh-');
  srv = await startServer({
    dataDir: dir,
    port: 0,
    proxyPort: null,
    egress: 'allow-all',
    statsIntervalMs: 200,
    rateLimit: { max: 100_000, windowMs: 60_000 },
    webhooks: { pollMs: 50, baseDelayMs: 100, maxDelayMs: 400, timeoutMs: 3000, key: randomBytes(32) },
  });
  owner = srv.ownerToken!;
  echo = await startTcpEcho();
});
after(async () => {
  await srv?.close();
  await echo?.close();
  await new Promise<void>((r) => receiver.close(() => r()));
  if (dir) removeDir(dir);
});

test('expired and cap_reached reach a webhook endpoint, signed', async () => {
  const hook = await callApi(srv.baseUrl, owner, 'POST', '/webhooks', { url, events: ['expired', 'cap_reached'] });
  assert.equal(hook.status, 201, JSON.stringify(hook.json));
  const secret: string = hook.json.secret;

  // Expiry of a live session.
  const exp = await callApi(srv.baseUrl, owner, 'POST', '/sessions', { client_id: 'wh-exp', zone: 'de-fra', reusable: true, expires_at: new Date(Date.now() + 1500).toISOString() });
  const live = await openVlessEcho(srv.vlessTcpPort!, exp.json.id, echo.port);
  assert.ok(live.got() >= 4);
  await live.closed;
  await waitFor(() => got.some((g) => g.type === 'expired'), 10_000, 'the expired webhook');
  const expired = got.find((g) => g.type === 'expired')!;
  assert.deepEqual(expired.data, { session_id: exp.json.id, reason: 'expired' });
  assert.ok(verifySignature(secret, expired.signature, expired.body, Math.floor(Date.now() / 1000)));

  // A client byte cap reached by a transfer.
  assert.equal((await callApi(srv.baseUrl, owner, 'PATCH', '/customer/limits/client', { downloaded_bytes: 100_000 })).status, 200);
  const capped = await callApi(srv.baseUrl, owner, 'POST', '/sessions', { client_id: 'wh-cap', zone: 'de-fra', reusable: true });
  const conn = await openVlessEcho(srv.vlessTcpPort!, capped.json.id, echo.port);
  for (let i = 0; i < 20 && !conn.s.destroyed; i++) {
    conn.s.write(Buffer.alloc(16 * 1024, 1));
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.race([conn.closed, new Promise((r) => setTimeout(r, 3000))]);
  await waitFor(() => got.some((g) => g.type === 'cap_reached'), 10_000, 'the cap_reached webhook');
  const cap = got.find((g) => g.type === 'cap_reached')!;
  assert.deepEqual(cap.data, { session_id: capped.json.id, reason: 'client_cap' });
  assert.ok(verifySignature(secret, cap.signature, cap.body, Math.floor(Date.now() / 1000)));
});
