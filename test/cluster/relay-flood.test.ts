// The geo relay port is reachable by anyone and needs no grant to be connected to: a flood of
// connections that never authenticate must not hold the node's descriptors. A real relay server
// runs in this process; a hostile client in a child process opens 1,000 connections from 50
// loopback addresses: most complete TLS and send a bad grant, then never read or close their side
// (half-open held), some complete TLS and send nothing, some never even start TLS. Six seconds
// after the last one was opened, this process's open descriptors (/proc/self/fd) are within 20
// of where they started: refused connections are closed at once (destroyed, not half-closed),
// silent ones by the handshake and request-line time-outs, and over the caps at accept.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRelayServer } from '../../server/node/relay-server.ts';
import { silentLogger } from '../../server/log.ts';
import { connect } from 'node:net';
import { removeDir, tempDir, waitFor } from '../helpers/server.ts';
import { makeCert } from '../helpers/tls.ts';
import { stopChild, tailOutput } from '../helpers/child.ts';

const dir = tempDir('vad-relay-flood-');
after(() => removeDir(dir));

const fds = () => readdirSync('/proc/self/fd').length;

/** The hostile client: plain JavaScript run by the child process. */
const ATTACKER = `
const net = require('node:net');
const tls = require('node:tls');
const [port, total] = process.argv.slice(1).map(Number);
const held = [];
let answered = 0;
let opened = 0;
function one(i) {
  return new Promise((resolve) => {
    const localAddress = '127.0.0.' + (10 + (i % 50));
    const raw = net.connect({ host: '127.0.0.1', port, localAddress, allowHalfOpen: true });
    raw.on('error', () => {});
    held.push(raw);
    const kind = i % 10; // 0: no TLS at all; 1: TLS and nothing; else: TLS and a bad grant
    if (kind === 0) return raw.once('connect', () => { opened++; resolve(); });
    const s = tls.connect({ socket: raw, rejectUnauthorized: false, ALPNProtocols: ['vad-relay'] });
    held.push(s);
    s.on('error', () => resolve());
    s.once('close', () => resolve());
    s.once('secureConnect', () => {
      opened++;
      if (kind !== 1) s.write(JSON.stringify({ from: 'serve', grant: Date.now() + 60000 + '.' + '0'.repeat(64), host: '127.0.0.1', port: 9 }) + '\\n');
      s.once('data', () => answered++);
      resolve();
    });
    setTimeout(resolve, 3000);
  });
}
(async () => {
  for (let i = 0; i < total; i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(total, i + 50); j++) batch.push(one(j));
    await Promise.all(batch);
  }
  process.stdout.write(JSON.stringify({ opened, answered }) + '\\n');
  setInterval(() => {}, 1000);
})();
`;

test('1,000 connections with a bad grant or nothing at all leave the descriptors where they were', async (t) => {
  const pair = makeCert(dir, 'relay');
  const relay = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: 'f'.repeat(64), egress: 'allow-all', log: silentLogger });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const port = (relay.address() as { port: number }).port;
  const base = fds();
  const child = spawn(process.execPath, ['-e', ATTACKER, String(port), '1000'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = tailOutput(child, 2000);
  try {
    const summary = await new Promise<{ opened: number; answered: number }>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (b) => {
        out += b;
        if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
      });
      child.once('exit', () => reject(new Error(`the attacker exited: ${tail()}`)));
    });
    const peak = fds();
    await new Promise((r) => setTimeout(r, 6000));
    const now = fds();
    t.diagnostic(`descriptors: ${base} before, ${peak} at the end of the flood, ${now} six seconds later; ${JSON.stringify(summary)}`);
    // The bad grants were answered (refused by the grant check, not only by the caps).
    assert.ok(summary.answered > 100, `answers: ${summary.answered}`);
    assert.ok(now - base <= 20, `open descriptors: ${base} before, ${peak} when the flood was opened, ${now} six seconds later (${JSON.stringify(summary)})`);
  } finally {
    await stopChild(child);
    await relay.shutdown();
  }
});

test('one source may hold 32 connections that have not authenticated; more are closed at accept, the rest at the handshake time-out', async () => {
  const pair = makeCert(dir, 'relay2');
  const relay = createRelayServer({ cert: readFileSync(pair.cert, 'utf8'), key: readFileSync(pair.key, 'utf8'), tokenHash: 'f'.repeat(64), egress: 'allow-all', log: silentLogger });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const port = (relay.address() as { port: number }).port;
  const closedAt: number[] = [];
  const start = Date.now();
  const socks = [];
  try {
    for (let i = 0; i < 40; i++) {
      const s = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.200', allowHalfOpen: true });
      s.on('error', () => {});
      // Held half-open on this side: the server's close shows as the end of what it sends.
      s.once('end', () => closedAt.push(Date.now() - start));
      socks.push(s);
      await new Promise((r) => s.once('connect', r));
    }
    // Another source is not held back by the first one's slots.
    const other = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.201' });
    other.on('error', () => {});
    await new Promise((r) => other.once('connect', r));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(closedAt.length, 8, 'the connections over the per-source cap were closed at once');
    assert.equal(other.destroyed, false);
    other.destroy();
    await waitFor(() => closedAt.length === 40, 5000, 'the silent connections were closed by the handshake time-out');
    assert.ok(closedAt[39] >= 2500 && closedAt[39] < 4900, `closed after ${closedAt[39]} ms`);
  } finally {
    for (const s of socks) s.destroy();
    await relay.shutdown();
  }
});
