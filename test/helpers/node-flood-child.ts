// Child process of the node flood test: a hostile node holding a real node token, on raw
// WebSockets to the control plane's /v2/node/channel. It makes contact, prints `contact`, and
// on `go SESSION` (stdin) attacks in waves until `stop`: 300 channels at once, 50,000 claims for
// SESSION (10,000 at once on a channel), 5,000 contacts, six 14 MiB reports and twenty reports of
// about 900 KiB (valid JSON:
// they cost a parse), printing `wave N` after each. It then prints `stats {...}` (what the control plane answered) and exits.
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';

const [url, token] = process.argv.slice(2);
if (!url || !token) throw new Error('usage: node-flood-child.ts CONTROL_URL NODE_TOKEN');
const channelUrl = `${url.replace(/^http/, 'ws')}/v2/node/channel`;
const MiB = 1024 * 1024;

const stats = {
  channelsTried: 0,
  opened: 0,
  statuses: {} as Record<string, number>,
  closeCodes: {} as Record<string, number>,
  claimsSent: 0,
  claimedOk: 0,
  claimedRefused: 0,
  contactsSent: 0,
  bigSent: 0,
  mediumSent: 0,
  waves: 0,
  /** Channels open when the attack stopped (after the last storm settled). */
  openAtEnd: 0,
};
const bump = (m: Record<string, number>, k: string | number) => (m[k] = (m[k] ?? 0) + 1);
const open = new Set<WebSocket>();
let stopping = false;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function connect(): Promise<WebSocket | null> {
  stats.channelsTried++;
  return new Promise((resolve) => {
    const ws = new WebSocket(channelUrl, { headers: { authorization: `Bearer ${token}` } });
    ws.on('open', () => {
      stats.opened++;
      open.add(ws);
      resolve(ws);
    });
    ws.on('unexpected-response', (_req, res) => {
      bump(stats.statuses, res.statusCode ?? 0);
      ws.terminate();
      resolve(null);
    });
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw)) as { type?: string; ok?: boolean };
      if (m.type === 'claimed') m.ok ? stats.claimedOk++ : stats.claimedRefused++;
    });
    ws.on('close', (code) => {
      if (open.delete(ws)) bump(stats.closeCodes, code);
      resolve(null);
    });
    ws.on('error', () => resolve(null));
  });
}

/** A channel that is open: the newest one, or new ones tried every 250 ms. */
async function live(): Promise<WebSocket | null> {
  while (!stopping) {
    const ws = [...open].at(-1);
    if (ws && ws.readyState === WebSocket.OPEN) return ws;
    const made = await connect();
    if (made) return made;
    await sleep(250);
  }
  return null;
}

/** A report of about `bytes` bytes of counters for sessions that do not exist (one id, repeated: as costly to parse). */
function report(seq: number, bytes: number): string {
  const entry = '"00000000-0000-4000-8000-000000000000":{"up":1,"down":1},';
  return `{"type":"report","seq":${seq},"ports":{"vless_ws_port":8787},"counters":{${entry.repeat(Math.floor(bytes / entry.length))}"x":{}}}`;
}

/** `count` frames at once on a live channel, as fast as they can be written; then the next channel. */
async function burst(count: number, frame: (i: number) => string, per: number, counted: (n: number) => void): Promise<void> {
  for (let sent = 0; sent < count && !stopping; ) {
    const ws = await live();
    if (!ws) return;
    const n = Math.min(per, count - sent);
    for (let i = 0; i < n && ws.readyState === WebSocket.OPEN; i++) ws.send(frame(sent + i));
    sent += n;
    counted(n);
    await new Promise((r) => setImmediate(r));
  }
}

const trace = (what: string) => process.env.FLOOD_TRACE && writeSync(2, `phase ${what} ${Date.now()}\n`);

async function wave(session: string, big: string, medium: string): Promise<void> {
  stats.waves++;
  // Many channels at once on one token.
  trace('channels');
  await Promise.all(Array.from({ length: 300 }, () => connect()));
  // Claims, 10,000 at once on a channel.
  trace('claims');
  await burst(50_000, (i) => JSON.stringify({ type: 'claim', id: i + 1, session, active: [] }), 10_000, (n) => (stats.claimsSent += n));
  // Contacts.
  trace('contacts');
  const contact = JSON.stringify({ type: 'report', seq: 0, ports: { vless_ws_port: 8787 } });
  await burst(5000, () => contact, 5000, (n) => (stats.contactsSent += n));
  // Large frames: six of 14 MiB, twenty of about 900 KiB, each group at once on a channel.
  trace('large frames');
  await burst(6, () => big, 6, (n) => (stats.bigSent += n));
  await burst(20, () => medium, 20, (n) => (stats.mediumSent += n));
}

const big = report(2_000_000_000, 14 * MiB);
const medium = report(2_000_000_001, 900 * 1024);
const first = await connect();
if (!first) throw new Error('the first channel was refused');
first.send(JSON.stringify({ type: 'report', seq: 0, ports: { vless_ws_port: 8787 } }));
writeSync(1, 'contact\n');

let done: Promise<void> = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  const [cmd, arg] = line.trim().split(' ');
  if (cmd === 'go') {
    done = (async () => {
      while (!stopping) {
        await wave(arg, big, medium);
        writeSync(1, `wave ${stats.waves}\n`);
      }
    })();
  } else if (cmd === 'stop') {
    stopping = true;
    void done.then(async () => {
      await sleep(500);
      stats.openAtEnd = [...open].filter((w) => w.readyState === WebSocket.OPEN).length;
      writeSync(1, `stats ${JSON.stringify(stats)}\n`);
      for (const w of open) w.terminate();
      process.exit(0);
    });
  }
});
