// A node may act only on the sessions placed on it (security). A hostile node, here a
// raw WebSocket holding a real node token, reports bytes and events for a session placed on
// another node and for one of the serve process's own, and asks to open their first connection:
// its state never names them, its report is acknowledged but only its own session's bytes and
// events are stored, and the claims are refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { callApi } from '../helpers/http.ts';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { writeZonesFile } from '../helpers/zones-file.ts';

let srv: RunningServer;
let owner: string;
let dir: string;
const sockets: WebSocket[] = [];

before(async () => {
  dir = tempDir('vad-node-scope-');
  const zonesFile = writeZonesFile(dir, ['br-sao', 'São Paulo', 'BR', 'sao paulo'], ['au-syd', 'Sydney', 'AU', 'sydney']);
  srv = await startServer({ zonesFile, dataDir: dir, port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 } });
  owner = (await srv.services.data.createToken('scope', 'owner')).token;
});
after(async () => {
  for (const s of sockets) s.terminate();
  await srv?.close();
  removeDir(dir);
});

const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);

/** A node's channel as a raw WebSocket: every message it receives, and a way to wait for one. */
async function channel(token: string) {
  const ws = new WebSocket(`${srv.origin.replace(/^http/, 'ws')}/v2/node/channel`, { headers: { authorization: `Bearer ${token}` } });
  sockets.push(ws);
  const got: Array<Record<string, any>> = [];
  ws.on('message', (raw) => got.push(JSON.parse(String(raw))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const send = (m: unknown) => ws.send(JSON.stringify(m));
  const next = async (match: (m: Record<string, any>) => boolean, what: string) => {
    await waitFor(() => got.some(match), 5000, what);
    return got.find(match)!;
  };
  return { ws, got, send, next };
}

test('a node acts only on the sessions placed on it: others\' bytes, events and claims are refused', async () => {
  const sao = await srv.services.data.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const syd = await srv.services.data.addNode({ name: 'syd-1', zone: 'au-syd', public_host: '127.0.0.3' });
  const good = await channel(sao.token);
  const bad = await channel(syd.token);
  for (const c of [good, bad]) c.send({ type: 'report', seq: 0, ports: { vless_ws_port: 8787 } });
  await waitFor(async () => {
    const zones = (await call('GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>;
    return zones.filter((z) => z.has_active_nodes && (z.code === 'br-sao' || z.code === 'au-syd')).length === 2;
  }, 5000, 'both nodes up');
  const onSao = (await call('POST', '/sessions', { client_id: 'victim', zone: 'br-sao', reusable: true })).json.id as string;
  const local = (await call('POST', '/sessions', { client_id: 'victim', zone: 'de-fra', reusable: true })).json.id as string;
  const own = (await call('POST', '/sessions', { client_id: 'mine', zone: 'au-syd', reusable: true })).json.id as string;
  // Max one session for the victim client, so that a claim would matter.
  assert.equal((await call('PATCH', '/customer/limits/client', { max_sessions: 1 })).status, 200);

  // The hostile node's state names its own session only.
  const state = await bad.next((m) => m.type === 'state' && m.sessions.some((s: { id: string }) => s.id === own), 'syd\'s state with its session');
  const named = JSON.stringify(bad.got.filter((m) => m.type === 'state'));
  assert.ok(!named.includes(onSao) && !named.includes(local), 'no state sent to syd names another node\'s or the local session');
  assert.deepEqual(state.sessions.map((s: { id: string }) => s.id), [own]);

  // Bytes and events for every session; the report is acknowledged, only its own part stored.
  const ev = (sessionId: string) => ({ customerId: 'ignored', sessionId, type: 'session_start', duration: 0, uploaded_bytes: 0, downloaded_bytes: 0 });
  bad.send({
    type: 'report',
    seq: 1,
    ports: { vless_ws_port: 8787 },
    counters: { [onSao]: { up: 1000, down: 50_000, status: 'ended' }, [local]: { up: 1000, down: 50_000, status: 'ended' }, [own]: { up: 11, down: 777, status: 'active' } },
    events: [ev(onSao), ev(local), ev(own)],
  });
  await bad.next((m) => m.type === 'ack' && m.seq === 1, 'the report acknowledged');
  const status = async (id: string) => (await call('GET', `/sessions/${id}/status`)).json;
  assert.deepEqual(await status(own).then((s) => [s.uploaded_bytes, s.downloaded_bytes, s.status]), [11, 777, 'active']);
  for (const id of [onSao, local]) {
    const s = await status(id);
    assert.deepEqual([s.uploaded_bytes, s.downloaded_bytes, s.status], [0, 0, 'created'], `${id.slice(0, 8)} untouched`);
  }
  const stored = srv.services.data as unknown as { eventsAfter(c: string, a: number, f: object, l: number): Array<{ session_id: string }> };
  const row = await srv.services.data.getSession(own);
  const logged = await stored.eventsAfter(row!.customer_id, 0, {}, 100);
  assert.deepEqual(logged.map((e) => e.session_id), [own], 'only its own session\'s event is stored');

  // Claims for sessions not placed on it are refused; for its own, granted.
  bad.send({ type: 'claim', id: 1, session: onSao, active: [] });
  bad.send({ type: 'claim', id: 2, session: local, active: [] });
  bad.send({ type: 'claim', id: 3, session: own, active: [] });
  for (const [id, ok] of [[1, false], [2, false], [3, true]] as const) {
    assert.equal((await bad.next((m) => m.type === 'claimed' && m.id === id, `claim ${id} answered`)).ok, ok, `claim ${id}`);
  }
  // The honest node, for comparison, is sent its session and may claim it.
  await good.next((m) => m.type === 'state' && m.sessions.some((s: { id: string }) => s.id === onSao), 'sao\'s state with its session');
  good.send({ type: 'claim', id: 1, session: onSao, active: [] });
  assert.equal((await good.next((m) => m.type === 'claimed' && m.id === 1, 'sao\'s claim answered')).ok, true);
  await call('DELETE', '/customer/limits/client');
});
