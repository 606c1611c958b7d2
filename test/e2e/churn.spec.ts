// A busy server and an open window: connection churn (VLESS connections opened and closed
// many times a second, each a session_start / session_stats / session_end) must not make the
// window or the tray rate-limit their own token. The server runs with the real limit (600
// requests per 60 s per token) and logs every answer; the check is that none was a 429 while
// the window (and, in the desktop project, main's tray watcher) followed the churn.
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { test, expect } from './fixtures.ts';
import { startBackend } from './backend.ts';

const SESSIONS = 8;
const CHURN_MS = 35_000;

/** A TCP echo server on loopback: the destination of every churned connection. */
async function echoServer(): Promise<Server> {
  const srv = createServer((s) => s.on('data', (d) => s.write(d)).on('error', () => {}));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return srv;
}

/** The VLESS request header (version 0, no add-ons, TCP to 127.0.0.1:port) and a payload. */
function vlessRequest(id: string, port: number, payload: string): Buffer {
  const head = Buffer.alloc(1 + 16 + 1 + 1 + 2 + 1 + 4);
  let o = 0;
  head[o++] = 0;
  Buffer.from(id.replace(/-/g, ''), 'hex').copy(head, o);
  o += 16;
  head[o++] = 0; // add-ons length
  head[o++] = 1; // TCP
  head.writeUInt16BE(port, o);
  o += 2;
  head[o++] = 1; // IPv4
  for (const b of [127, 0, 0, 1]) head[o++] = b;
  return Buffer.concat([head, Buffer.from(payload)]);
}

/** One connection through the VLESS TCP inbound: request, wait for the echo, close. */
function oneConnection(vlessPort: number, id: string, destPort: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(vlessPort, '127.0.0.1');
    const done = (ok: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 3000);
    s.once('connect', () => s.write(vlessRequest(id, destPort, 'ping')));
    s.on('data', (d) => d.includes('ping') && done(true));
    s.once('error', () => done(false));
  });
}

test('connection churn with the window open: no 429 for the window or the tray', async ({ openApp }, testInfo) => {
  test.skip(testInfo.project.name === 'electron', 'the desktop project runs main (tray watcher) and the renderer together');
  test.setTimeout(120_000);
  const lines: string[] = [];
  const b = await startBackend({ rateLimit: { max: 600, windowMs: 60_000 }, egress: 'allow-all', onRequestLog: (l) => lines.push(l) });
  const echo = await echoServer();
  try {
    const ids: string[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const r = await b.api<{ id: string }>('POST', '/sessions', { client_id: `churn-${i}`, zone: 'de-fra', reusable: true });
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    const app = await openApp({ backend: b });
    await app.waitReady();
    await expect(app.page.getByRole('row', { name: /churn-0/ })).toBeVisible();
    const vlessPort = b.server.vlessTcpPort!;
    const destPort = (echo.address() as AddressInfo).port;

    // The churn: every session connects and disconnects, again and again (bounded in time).
    const until = Date.now() + CHURN_MS;
    let connections = 0;
    let relayed = 0;
    while (Date.now() < until) {
      const results = await Promise.all(ids.map((id) => oneConnection(vlessPort, id, destPort)));
      connections += results.length;
      relayed += results.filter(Boolean).length;
      await new Promise((r) => setTimeout(r, 40));
    }
    // Let the last batches and look-ups settle.
    await app.page.waitForTimeout(3000);

    const answers = lines.filter((l) => / (GET|POST|PATCH|PUT|DELETE) \S+ \d{3} /.test(l));
    const limited = answers.filter((l) => / \d{3} /.exec(l)?.[0].trim() === '429');
    testInfo.annotations.push({ type: 'churn', description: `${connections} connections (${relayed} relayed) in ${CHURN_MS / 1000} s; ${answers.length} API answers, ${limited.length} of them 429` });
    expect(relayed, 'the churn really ran').toBeGreaterThan(SESSIONS * 50);
    expect(limited, `429 answers:\n${limited.slice(0, 5).join('\n')}`).toEqual([]);
    // The window still shows the truth: every session is known, none shown active for ever.
    await expect(app.page.getByRole('row', { name: /churn-7/ })).toBeVisible();
  } finally {
    echo.close();
    await b.stop();
  }
});
