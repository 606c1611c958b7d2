// The entry's dials to a geo relay resume the TLS session the relay issued last (no certificate,
// no signature), and the pin holds all the same: a real relay listener (TLS, in this process)
// with a loopback destination that answers `hello`, dialled by the entry's own openRelay:
//  - the second dial to the same relay is resumed and relays as the first did;
//  - a relay restarted on the same port with the same certificate cannot resume (its tickets
//    are another process's): a full handshake, checked against the pin, accepted;
//  - a relay on the same port with another certificate: the session offered is not taken, the
//    full handshake's certificate is not the pin: refused, and nothing of it is kept.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createServer, type Server } from 'node:net';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { createRelayServer } from '../../server/node/relay-server.ts';
import { openRelay } from '../../server/dataplane/relay-dial.ts';
import { keyExpiry, relayKey, signRelayRequest } from '../../server/dataplane/relay-grant.ts';
import { pinOf } from '../../server/tls/certificates.ts';
import { silentLogger } from '../../server/log.ts';
import { removeDir, tempDir } from '../helpers/server.ts';
import { makeCert } from '../helpers/tls.ts';

const TOKEN_HASH = 'b'.repeat(64);
const dir = tempDir('vad-relay-resume-');
const pairs = { a: makeCert(dir, 'a'), b: makeCert(dir, 'b') };
let dest: Server;
let destPort = 0;
let port = 0;

before(async () => {
  dest = createServer((s) => s.end('hello\n'));
  await new Promise<void>((r) => dest.listen(0, '127.0.0.1', () => r()));
  destPort = (dest.address() as { port: number }).port;
});
after(() => {
  dest.close();
  removeDir(dir);
});

async function relayWith(pair: { cert: string; key: string }) {
  const relay = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: TOKEN_HASH, entries: () => new Set(['node-a']), egress: 'allow-all', log: silentLogger });
  await new Promise<void>((r) => relay.listen(port, '127.0.0.1', () => r()));
  port = (relay.address() as { port: number }).port;
  return relay;
}

const exp = keyExpiry();
const route = (pem: string) => ({ via: 'relay' as const, node: 'exit', host: '127.0.0.1', port, pcs: pinOf(new X509Certificate(pem)), from: 'node-a', exp, key: relayKey(TOKEN_HASH, 'node-a', exp) });

/** One dial through the entry's openRelay: resumed or not, and what the destination said. */
async function dial(pem: string): Promise<{ resumed: boolean; said: string }> {
  const r = route(pem);
  const { tls, rest } = await openRelay(r, { ...signRelayRequest(r, 'session-one', '127.0.0.1', destPort), host: '127.0.0.1', port: destPort }, 5000);
  const resumed = tls.isSessionReused();
  let said = rest.toString();
  tls.on('data', (b: Buffer) => (said += b));
  tls.resume();
  await new Promise((r) => tls.once('close', r));
  return { resumed, said };
}

test('dials resume the relay\'s session; a restarted relay and another certificate get a full handshake, checked against the pin', async () => {
  let relay = await relayWith(pairs.a);
  const first = await dial(pairs.a.pem);
  assert.deepEqual(first, { resumed: false, said: 'hello\n' });
  const second = await dial(pairs.a.pem);
  assert.deepEqual(second, { resumed: true, said: 'hello\n' });
  assert.deepEqual(await dial(pairs.a.pem), { resumed: true, said: 'hello\n' });

  // The same certificate in a new relay process: its tickets differ, so a full handshake (and the pin).
  await relay.shutdown();
  relay = await relayWith(pairs.a);
  assert.deepEqual(await dial(pairs.a.pem), { resumed: false, said: 'hello\n' });
  assert.deepEqual(await dial(pairs.a.pem), { resumed: true, said: 'hello\n' });

  // Another certificate on that port: the entry still pins a's.
  await relay.shutdown();
  relay = await relayWith(pairs.b);
  await assert.rejects(dial(pairs.a.pem), /another certificate than its pin/);
  await assert.rejects(dial(pairs.a.pem), /another certificate than its pin/);
  // Its own pin: accepted, then resumed.
  assert.deepEqual(await dial(pairs.b.pem), { resumed: false, said: 'hello\n' });
  assert.deepEqual(await dial(pairs.b.pem), { resumed: true, said: 'hello\n' });
  await relay.shutdown();
});
