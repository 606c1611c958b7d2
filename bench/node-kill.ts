// A figure of the cluster benchmark (bench/cluster.ts): bytes lost per `kill -9` of a node moving
// data at full speed. A raw-TCP VLESS download through the node from a loopback origin that
// writes as fast as the node reads; the node is killed with -9 in the middle of it and restarted
// on the same data folder; once the session's counters settle, what they gained is compared with
// what moved. The loss is what the client got that the counters never gained (delivered, not
// counted), beside the 1 MiB bound. Also printed: what was counted but not delivered (read from the
// origin, still on its way to the client at the kill), and what the origin handed its kernel that
// the counters never gained (mostly socket buffers the node never read: an upper bound, not a loss).
import { connect, createServer, type Socket } from 'node:net';
import { buildVlessHeader } from '../server/dataplane/vless-header.ts';

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (n: number) => `${(n / MiB).toFixed(2)} MiB`;

export interface NodeKillSetup {
  sessionId: string;
  /** The node's raw-TCP VLESS port (host 127.0.0.2). */
  tcpPort: number;
  /** `kill -9` of the node; resolves once it is gone. */
  kill9(): Promise<void>;
  /** Starts the node again on the same data folder (the caller stops it at the end). */
  restart(): Promise<unknown>;
  /** The session's counters through the API. */
  counters(): Promise<{ up: number; down: number }>;
}

async function settled(counters: NodeKillSetup['counters']): Promise<{ up: number; down: number }> {
  let last = '';
  for (let i = 0; i < 30; i++) {
    const now = JSON.stringify(await counters());
    if (now === last) return JSON.parse(now);
    last = now;
    await sleep(1500);
  }
  return JSON.parse(last);
}

/** Runs the figure and prints it; answers the bytes lost (delivered, not counted). */
export async function nodeKillFigure(setup: NodeKillSetup, runMs = 1500): Promise<number> {
  const chunk = Buffer.alloc(256 * 1024, 3);
  let sent = 0;
  const sockets = new Set<Socket>();
  const origin = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    s.resume();
    const pump = () => {
      while (!s.destroyed) {
        const ok = s.write(chunk, (err) => {
          if (!err) sent += chunk.length;
        });
        if (!ok) return void s.once('drain', pump);
      }
    };
    pump();
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
  try {
    const before = await settled(setup.counters);
    let received = 0;
    const client = connect(setup.tcpPort, '127.0.0.2');
    client.on('error', () => {});
    client.on('data', (d: Buffer) => (received += d.length));
    const port = (origin.address() as { port: number }).port;
    client.write(buildVlessHeader({ id: setup.sessionId, command: 'tcp', port, address: '127.0.0.1' }));
    await sleep(runMs);
    await setup.kill9();
    // The VLESS response header (2 bytes) is no payload.
    const got = Math.max(0, received - 2);
    client.destroy();
    for (const s of sockets) s.destroy();
    await setup.restart();
    const after = await settled(setup.counters);
    const counted = after.down - before.down;
    const lost = Math.max(0, got - counted);
    console.log(
      `bytes lost per kill -9 of a node moving data at full speed (${mib(got)} through it in ${runMs} ms, restarted on its data folder): ` +
        `delivered but not counted ${mib(lost)} | bound 1.00 MiB | counted, not delivered ${mib(Math.max(0, counted - got))}; ` +
        `origin sent ${mib(sent)}, ${mib(Math.max(0, sent - counted))} of it never counted (socket buffers the node never read, at most)`,
    );
    return lost;
  } finally {
    for (const s of sockets) s.destroy();
    origin.close();
  }
}
