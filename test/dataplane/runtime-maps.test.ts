// The runtime's memory shrinks: once a customer's sessions have ended and its
// token buckets owe nothing, its customer and client state are dropped; state made again later
// starts from the stored totals, so a client over its byte cap is still refused; on a cluster node
// it keeps what its grant has left, so the same grant is not spent twice.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startHarness, type Harness } from './helpers/harness.ts';
import { startTcpEcho } from './helpers/targets.ts';
import { buildVlessHeader } from '../../server/dataplane/vless-header.ts';

let h: Harness;
let echo: Awaited<ReturnType<typeof startTcpEcho>>;
before(async () => {
  h = await startHarness({ reconnectGraceMs: 100 });
  echo = await startTcpEcho();
});
after(async () => {
  await h?.close();
  await echo?.close();
});
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends `bytes` through the echo and reads them back; resolves with whether it was relayed. */
async function echoOnce(id: string, bytes = 2): Promise<boolean> {
  const s = connect(h.vlessTcpPort, '127.0.0.1');
  s.on('error', () => {});
  let got = 0;
  s.on('data', (b: Buffer) => { got += b.length; });
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  s.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echo.port, address: '127.0.0.1' }), Buffer.alloc(bytes, 7)]));
  const end = performance.now() + 3000;
  while (got < bytes + 2 && performance.now() < end && !s.destroyed) await settle(5);
  s.destroy();
  await closed;
  return got >= bytes + 2;
}

async function until(pred: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!pred() && performance.now() < end) await settle(20);
  return pred();
}

test('customers and clients without sessions or owed buckets are dropped from memory', async () => {
  const ids: string[] = [];
  for (let c = 0; c < 8; c++) {
    // one customer with speed limits, so its buckets are in use while it moves bytes
    if (c === 0) h.mem.setLimits(`cust-${c}`, 'session', { download_speed: 64 * 1024, upload_speed: 64 * 1024 });
    for (let k = 0; k < 2; k++) ids.push(h.mem.createSession({ customer: `cust-${c}`, client: `client-${k}`, reusable: true }));
  }
  for (const id of ids) assert.ok(await echoOnce(id, 1000));
  const size = () => h.dp.runtimeSize!();
  assert.ok(await until(() => size().sessions === 0, 5000), `sessions left: ${JSON.stringify(size())}`);
  assert.ok(await until(() => size().customers === 0 && size().clients === 0, 5000), `state left: ${JSON.stringify(size())}`);
  for (const id of ids) assert.equal(h.mem.sessions.get(id)!.status, 'idle');
});

test('state made again after being dropped starts from the stored totals: a client over its cap stays refused', async () => {
  const customer = 'cust-cap';
  h.mem.setLimits(customer, 'client', { uploaded_bytes: 5000 });
  const a = h.mem.createSession({ customer, client: 'capped', reusable: true });
  await echoOnce(a, 8000); // reaches the client's upload cap
  const size = () => h.dp.runtimeSize!();
  assert.ok(await until(() => size().customers === 0, 5000), `state left: ${JSON.stringify(size())}`);
  const b = h.mem.createSession({ customer, client: 'capped', reusable: true });
  assert.equal(await echoOnce(b), false, 'a new session of the capped client was admitted after its state was dropped');
  const other = h.mem.createSession({ customer, client: 'fresh', reusable: true });
  assert.equal(await echoOnce(other), true);
});

test('a cluster node: state made again after being dropped keeps what its grant has left, not the whole grant again', async () => {
  // A node's share of a client's cap (server/node/shares.ts): 6000 bytes down left, and no more
  // to come. The next share from the control plane may be late (a loaded machine): meanwhile the
  // client's state is dropped and made again by a new connection.
  const customer = 'cust-grant';
  h.dp.setClusterShare!(customer, 'granted', { left: { up: Infinity, down: 6000 }, final: { up: false, down: true }, rateShare: 1 });
  const a = h.mem.createSession({ customer, client: 'granted', reusable: true });
  assert.equal(await echoOnce(a, 4000), true, 'the first connection moves within the grant');
  const size = () => h.dp.runtimeSize!();
  assert.ok(await until(() => size().customers === 0, 5000), `state left: ${JSON.stringify(size())}`);
  const b = h.mem.createSession({ customer, client: 'granted', reusable: true });
  await echoOnce(b, 4000);
  assert.ok(await until(() => size().sessions === 0, 5000), `sessions left: ${JSON.stringify(size())}`);
  const down = h.mem.sessions.get(a)!.downloaded_bytes + h.mem.sessions.get(b)!.downloaded_bytes;
  assert.ok(down <= 6000, `the two connections moved ${down} bytes down for a grant of 6000`);
});
