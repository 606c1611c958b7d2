// Exits and sticky sessions of the geo proxy in a cluster: a control plane on a throwaway
// PostgreSQL (its own proxy the entry), two real nodes of one zone (runNode, in process): ams-a on
// 127.0.0.2 leaving from 127.0.0.2 and 127.0.0.4, ams-b on 127.0.0.3. Real curl is the client; the
// destination answers with the source address it saw. New connections rotate over the nodes and
// their addresses; a session key holds its node and address; when its node goes, the next
// connection moves (X-Proxy-Session-Moved: 1, on a plain answer and on CONNECT's 200), a strict key
// fails with 503 sticky_exit_gone instead, until STICKY_IDLE_MS without a connection end its
// session (60 s by default; this entry is given 10 s, the unit test of exits.ts checks the default).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { callApi } from '../helpers/http.ts';
import { startPostgres, type PgServer } from '../helpers/postgres.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { writeZonesFile } from '../helpers/zones-file.ts';

let pg: PgServer;
let srv: RunningServer;
let a: RunningNode | undefined;
let b: RunningNode;
let web: Server;
let webPort = 0;
let owner: string;
const dirs: string[] = [];
const A_ADDRESSES = ['127.0.0.2', '127.0.0.4'];
/** The entry's sticky idle time: long enough for ams-a to go and its keys to move, short for a test. */
const STICKY_IDLE_MS = 10_000;

before(async () => {
  pg = await startPostgres();
  const dir = tempDir('vad-exits-cp-');
  dirs.push(dir);
  const zonesFile = writeZonesFile(dir, ['nl-ams', 'Amsterdam', 'NL', 'amsterdam']);
  srv = await startServer({ zonesFile, dataDir: dir, database: pg.url(), port: 0, vlessTcpPort: null, proxyPort: 0, egress: 'allow-all', rateLimit: { max: 100_000, windowMs: 60_000 }, connectionLimits: { stickyIdleMs: STICKY_IDLE_MS } });
  owner = (await srv.services.data.createToken('exits', 'owner')).token;
  const node = async (name: string, host: string, egressAddresses: string[]) => {
    const added = await srv.services.data.addNode({ name, zone: 'nl-ams', public_host: host });
    const d = tempDir('vad-exits-node-');
    dirs.push(d);
    return runNode({ controls: [srv.origin], token: added.token, host, port: 0, vlessTcpPort: null, proxyPort: null, relayPort: 0, egress: 'allow-all', egressAddresses, dataDir: d, log: silentLogger });
  };
  a = await node('ams-a', '127.0.0.2', A_ADDRESSES);
  b = await node('ams-b', '127.0.0.3', ['127.0.0.3']);
  web = createServer((req, res) => res.end(req.socket.remoteAddress ?? ''));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
  webPort = (web.address() as { port: number }).port;
});
after(async () => {
  await a?.close();
  await b?.close();
  await srv?.close();
  await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
  await pg?.destroy();
  for (const d of dirs) removeDir(d);
});

interface Answer { status: number; body: string; moved: boolean; error?: string }

/** curl through serve's proxy (a child process: the nodes run in this process); with `connect`, a CONNECT tunnel. */
function ask(user: string, pass: string, connect = false): Promise<Answer> {
  const args = ['-s', '-v', '--max-time', '10', '-x', `http://127.0.0.1:${srv.proxyPort}`, '-U', `${user}:${pass}`, ...(connect ? ['-p'] : []), `http://127.0.0.1:${webPort}/where`];
  return new Promise((resolve) => {
    execFile('curl', args, { encoding: 'utf8' }, (_err, stdout, stderr) => {
      const heads = stderr.split('\n').filter((l) => l.startsWith('< ')).map((l) => l.slice(2).trim());
      const statuses = heads.filter((l) => l.startsWith('HTTP/')).map((l) => Number(l.split(' ')[1]));
      const status = connect && statuses[0] !== 200 ? statuses[0] : statuses.at(-1) ?? 0;
      const error = heads.find((l) => /^x-proxy-error:/i.test(l))?.split(':')[1].trim();
      resolve({ status, body: stdout, moved: heads.some((l) => /^x-proxy-session-moved: 1$/i.test(l)), ...(error ? { error } : {}) });
    });
  });
}

const onA = (addr: string) => A_ADDRESSES.includes(addr);

test('rotation over two nodes and their addresses; a key holds its node and address; its node gone, it moves, or strict fails', async () => {
  const made = await callApi(srv.baseUrl, owner, 'POST', '/sessions', { client_id: 'exits', zone: 'de-fra', reusable: true });
  assert.equal(made.status, 201);
  const id: string = made.json.id;
  // Both nodes up and known to serve's routes: rotation reaches both.
  const seen = new Set<string>();
  await waitFor(async () => {
    const r = await ask(`${id}-cc-NL`, id);
    if (r.status === 200) seen.add(r.body);
    return seen.has('127.0.0.3') && [...seen].some(onA);
  }, 20_000, 'new connections leave from both nodes');
  for (let i = 0; i < 12; i++) seen.add((await ask(`${id}-cc-NL`, id)).body);
  assert.deepEqual([...seen].sort(), ['127.0.0.2', '127.0.0.3', '127.0.0.4'], 'rotation over the nodes and ams-a\'s two addresses');

  // Keys: each holds one exit (node and address) over its connections; find three on ams-a.
  const keysOnA: string[] = [];
  let strictOnA = '';
  let strictLastUsed = 0; // when the strict key's last connection was asked for (its session's idle time counts from then)
  for (let k = 0; k < 40 && (keysOnA.length < 2 || !strictOnA); k++) {
    const strict = keysOnA.length >= 2;
    const user = `${id}-cc-NL-sessid-k${k}${strict ? '-strict' : ''}`;
    const got = new Set<string>();
    let asked = 0;
    for (let i = 0; i < 3; i++) {
      asked = Date.now();
      const r = await ask(user, id, i === 1);
      assert.equal(r.status, 200);
      assert.equal(r.moved, false);
      got.add(r.body);
    }
    assert.equal(got.size, 1, `key k${k} held its exit: ${[...got]}`);
    if (!onA([...got][0])) continue;
    if (strict) [strictOnA, strictLastUsed] = [user, asked];
    else keysOnA.push(user);
  }
  assert.ok(keysOnA.length === 2 && strictOnA, 'keys landed on ams-a');
  // The two keys found first are used again, so that none has sat idle through the search.
  for (const user of keysOnA) {
    const r = await ask(user, id);
    assert.ok(r.status === 200 && onA(r.body) && !r.moved, `${user} still on ams-a: ${JSON.stringify(r)}`);
  }

  // ams-a stops (cleanly: it says so and is down at once): the next connection of a key moves
  // to ams-b and says so, once.
  await a!.close();
  a = undefined;
  let movedAnswer: Answer | undefined;
  await waitFor(async () => {
    const r = await ask(keysOnA[0], id);
    if (r.status === 200) movedAnswer = r;
    return r.status === 200;
  }, 30_000, 'the key moved to the other node');
  assert.deepEqual(movedAnswer, { status: 200, body: '127.0.0.3', moved: true });
  assert.deepEqual(await ask(keysOnA[0], id), { status: 200, body: '127.0.0.3', moved: false }, 'and stays there');
  assert.deepEqual(await ask(keysOnA[1], id, true), { status: 200, body: '127.0.0.3', moved: true }, 'CONNECT\'s 200 says it moved');
  // strict: fails instead of moving, and keeps failing while its session lives
  const gone = await ask(strictOnA, id);
  assert.equal(gone.status, 503);
  assert.equal(gone.error, 'sticky_exit_gone');
  assert.equal(JSON.parse(gone.body).error.code, 'sticky_exit_gone');
  const c = await ask(strictOnA, id, true);
  assert.equal(c.status, 503);
  assert.equal(c.error, 'sticky_exit_gone');
  assert.ok(Date.now() - strictLastUsed < STICKY_IDLE_MS, 'the refusals above came while the strict key\'s session lived');
  // STICKY_IDLE_MS without a connection (failed ones do not count): its session is over, a new one starts
  await new Promise((r) => setTimeout(r, Math.max(0, strictLastUsed + STICKY_IDLE_MS + 2000 - Date.now())));
  assert.deepEqual(await ask(strictOnA, id), { status: 200, body: '127.0.0.3', moved: false });
});
