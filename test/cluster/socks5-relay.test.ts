// SOCKS5 CONNECT in a cluster takes the HTTP CONNECT's geo path: a user name asking for another
// country leaves from the node there (127.0.0.3), relayed node to node; no node up there is reply
// 0x03; UDP for a place on another node is 0x07; the bytes count once, on the session. Real curl.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { closed, socksRequest } from '../dataplane/helpers/socks5-client.ts';

let srv: RunningServer;
let ams: RunningNode;
let web: Server;
let webPort = 0;
let owner: string;
const dirs: string[] = [];

before(async () => {
  const dir = tempDir('vad-s5-cp-');
  dirs.push(dir);
  const zonesFile = join(dir, 'zones.json');
  writeFileSync(zonesFile, JSON.stringify({
    zones: [
      { code: 'de-fra', name: 'Frankfurt', country: 'DE', cities: ['frankfurt'], nodes: ['local'] },
      { code: 'nl-ams', name: 'Amsterdam', country: 'NL', cities: ['amsterdam'], nodes: [] },
      { code: 'jp-tyo', name: 'Tokyo', country: 'JP', cities: ['tokyo'], nodes: [] },
    ],
  }));
  srv = await startServer({ zonesFile, dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: 0, egress: 'allow-all', rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = (await srv.services.data.createToken('s5geo', 'owner')).token;
  const added = await srv.services.data.addNode({ name: 'ams-1', zone: 'nl-ams', public_host: '127.0.0.3' });
  const d = tempDir('vad-s5-node-');
  dirs.push(d);
  ams = await runNode({ controls: [srv.origin], token: added.token, host: '127.0.0.3', port: 0, vlessTcpPort: null, proxyPort: 0, relayPort: 0, egress: 'allow-all', egressAddresses: ['127.0.0.3'], dataDir: d, log: silentLogger });
  web = createServer((req, res) => res.end(req.socket.remoteAddress ?? ''));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
  webPort = (web.address() as { port: number }).port;
});
after(async () => {
  await ams?.close();
  await srv?.close();
  await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
  for (const d of dirs) removeDir(d);
});

const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);

/** curl --socks5-hostname through the serve process's proxy port (a child: the node runs in this process). */
function curl(user: string, pass: string): Promise<{ code: number; body: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '--max-time', '10', '--socks5-hostname', `127.0.0.1:${srv.proxyPort}`, '--proxy-user', `${user}:${pass}`, `http://127.0.0.1:${webPort}/where`], { encoding: 'utf8' }, (err, stdout) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, body: stdout });
    });
  });
}

test('SOCKS5 CONNECT for another country leaves from the node there, relayed; counted once; 0x03 where no node is up', async () => {
  await waitFor(async () => ((await call('GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>).find((z) => z.code === 'nl-ams')?.has_active_nodes === true, 10_000, 'ams up');
  const made = await call('POST', '/sessions', { client_id: 's5-geo', zone: 'de-fra', reusable: true });
  const id: string = made.json.id;
  assert.deepEqual(await curl(id, id), { code: 0, body: '127.0.0.1' }, 'no targeting: from the serve process itself');
  await waitFor(async () => (await curl(`${id}-cc-NL`, id)).body === '127.0.0.3', 10_000, 'relayed to ams');
  // counted once, on the session: a relayed request adds what a direct one adds ('127.0.0.3' and
  // '127.0.0.1' have the same length)
  const counters = async () => {
    const st = (await call('GET', `/sessions/${id}/status`)).json;
    return { up: st.uploaded_bytes as number, down: st.downloaded_bytes as number };
  };
  const c0 = await counters();
  assert.equal((await curl(id, id)).body, '127.0.0.1');
  await waitFor(async () => (await counters()).down > c0.down, 5000, 'the direct request counted');
  const c1 = await counters();
  assert.equal((await curl(`${id}-cc-NL`, id)).body, '127.0.0.3');
  await waitFor(async () => (await counters()).down > c1.down, 5000, 'the relayed request counted');
  const c2 = await counters();
  assert.deepEqual({ up: c2.up - c1.up, down: c2.down - c1.down }, { up: c1.up - c0.up, down: c1.down - c0.down });
  // in the catalogue, no node up: 0x03; UDP to a place on another node: 0x07
  for (const [user, cmd, rep] of [[`${id}-cc-JP`, 1, 0x03], [`${id}-cc-NL`, 3, 0x07]] as const) {
    const r = await socksRequest(srv.proxyPort!, user, id, cmd, '127.0.0.1', webPort);
    assert.equal(r.reply.rep, rep, user);
    await closed(r.s);
  }
});
