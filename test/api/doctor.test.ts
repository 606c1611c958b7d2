// GET /v2/doctor: the checks a server runs about itself, on SQLite and on PostgreSQL, read the
// way the desktop app reads it (main's ApiClient behind the IPC handler), owner tokens only.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ApiClient } from '../../main/api-client.ts';
import { createHandlers } from '../../main/ipc-handlers.ts';
import { OP_NAMES, registerIpc } from '../../main/ipc.ts';
import { startServer } from '../../server/serve.ts';
import { startPostgres } from '../helpers/postgres.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

interface Report {
  checks: { id: string; status: string; detail: string; fix: string }[];
  summary: { pass: number; warn: number; fail: number };
}

function zonesFile(dir: string): string {
  const file = join(dir, 'zones.json');
  writeFileSync(file, JSON.stringify({ zones: [{ code: 'de-fra', name: 'Frankfurt', country: 'DE', nodes: ['local'] }, { code: 'au-syd', name: 'Sydney', country: 'AU', nodes: [] }] }));
  return file;
}

async function doctorOf(database?: string) {
  const dir = tempDir();
  const srv = await startServer({ dataDir: dir, database, host: '127.0.0.1', port: 0, vlessTcpPort: 0, proxyPort: null, publicHost: '127.0.0.1', zonesFile: zonesFile(dir), rateLimit: { max: 100_000, windowMs: 60_000 } });
  const owner = (await srv.services.data.createToken('acme', 'owner')).token;
  const agent = (await srv.services.data.createToken('acme', 'agent')).token;
  const client = (token: string) => new ApiClient(() => ({ baseUrl: srv.baseUrl, token }));
  return { srv, owner, agent, client, close: async () => (await srv.close(), removeDir(dir)) };
}

describe('GET /v2/doctor', () => {
  test('SQLite, TLS off: the server\'s own checks through the desktop path; a zone offered without a node warns; agents are refused', async () => {
    const s = await doctorOf();
    try {
      const handlers = createHandlers({ api: s.client(s.owner), endpoints: {} as never, streams: {} as never, clipboard: { writeText: () => {} }, backups: {} as never, autoBackup: {} as never });
      const got = await handlers.runDoctor();
      assert.ok(got.ok, JSON.stringify(got));
      const r = got.value as Report;
      assert.deepEqual(r.checks.map((c) => c.id), ['port-api', 'port-vless-tcp', 'public-host', 'tls-mode', 'egress', 'database', 'zones', 'cluster']);
      const byId = new Map(r.checks.map((c) => [c.id, c]));
      assert.match(byId.get('port-api')!.detail, /^reachable at 127\.0\.0\.1:\d+$/);
      assert.match(byId.get('tls-mode')!.detail, /^off: auto: the public host 127\.0\.0\.1 is loopback/);
      assert.match(byId.get('database')!.detail, /schema version \d+ \(the latest\)/);
      assert.equal(byId.get('cluster')!.status, 'warn');
      assert.match(byId.get('cluster')!.detail, /au-syd: no node/);
      assert.deepEqual(r.summary, { pass: 7, warn: 1, fail: 0 });

      const refused = await s.client(s.agent).doctor();
      assert.equal(refused.ok, false);
      assert.equal(!refused.ok && refused.error.status, 403);
    } finally {
      await s.close();
    }
  });

  test('PostgreSQL: the schema version read from the cluster database, the clock compared with its clock', async (t) => {
    const pg = await startPostgres(t);
    const s = await doctorOf(pg.url());
    try {
      const got = await s.client(s.owner).doctor();
      assert.ok(got.ok, JSON.stringify(got));
      const db = got.value.checks.find((c) => c.id === 'database')!;
      assert.equal(db.status, 'pass');
      assert.match(db.detail, /^the PostgreSQL database reachable, schema version \d+ \(the latest\)$/);
      // The instance's clock against PostgreSQL's (on SQLite it is left out: one machine, one clock).
      const clock = got.value.checks.find((c) => c.id === 'clock')!;
      assert.equal(clock.status, 'pass', clock.detail);
      assert.match(clock.detail, /^within 5 s of PostgreSQL \(about 0(\.\d)? s apart\)$/);
    } finally {
      await s.close();
    }
  });

  test('IPC: runDoctor takes no argument', async () => {
    const channels = new Map<string, (event: unknown, ...args: unknown[]) => Promise<{ ok: boolean; error?: { code: string } }>>();
    const calls: unknown[][] = [];
    const handlers = Object.fromEntries(OP_NAMES.map((n) => [n, async (...args: unknown[]) => (calls.push(args), { ok: true, value: true })]));
    registerIpc({ handle: (c, l) => void channels.set(c, l as never), removeHandler: (c) => void channels.delete(c) }, handlers as never, () => true);
    const call = (...args: unknown[]) => channels.get('app:runDoctor')!({ senderFrame: {} }, ...args);
    assert.equal((await call()).ok, true);
    assert.equal((await call('extra')).error?.code, 'invalid_request');
    assert.deepEqual(calls, [[]]);
  });
});
