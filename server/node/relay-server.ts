// A node's geo relay listener (issue 10, server/cluster/geo.ts): the exit of a geo-targeted proxy
// request that entered the cluster at another node or a `serve` process. TLS with the node's own
// self-signed certificate (pinned by the entry), then one request line
//   {"from": "<entry>", "grant": "<expiry>.<hmac>", "host": "<destination>", "port": N}\n
// checked against the node's own token hash (a grant names who may use it and expires), then the
// destination is dialled under this node's egress policy and from its egress address, `OK\n` is
// answered and bytes are piped both ways. Nothing is counted here: the entry counts, once.
// Every step has a timeout: the request line 5 s, the dial 10 s, no byte either way 300 s.
import { createServer, type Server, type TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import { dialTcp } from '../dataplane/outbound.ts';
import { EgressRefused, type EgressPolicy } from '../dataplane/egress.ts';
import { verifyRelayGrant } from '../cluster/geo.ts';
import type { Logger } from '../domain.ts';

const HEAD_TIMEOUT_MS = 5000;
const DIAL_TIMEOUT_MS = 10_000;
const IDLE_MS = 300_000;
const MAX_HEAD = 4096;
/** Relayed connections open at once; over it new ones are refused. */
const MAX_OPEN = 4096;

export interface RelayServerOptions {
  cert: string;
  key: string;
  tokenHash: string;
  egress: EgressPolicy;
  egressAddress?: string;
  log: Logger;
}

export function createRelayServer(opts: RelayServerOptions): Server & { shutdown(): Promise<void> } {
  const open = new Set<Socket>();
  const all = new Set<Socket>();
  const server = createServer({ cert: opts.cert, key: opts.key, ALPNProtocols: ['vad-relay'], handshakeTimeout: HEAD_TIMEOUT_MS }, (sock: TLSSocket) => {
    sock.on('error', () => {});
    all.add(sock);
    sock.once('close', () => all.delete(sock));
    if (open.size >= MAX_OPEN) return void sock.end(`${JSON.stringify({ error: 'busy' })}\n`);
    let head = Buffer.alloc(0);
    const timer = setTimeout(() => sock.destroy(), HEAD_TIMEOUT_MS);
    const refuse = (error: string) => {
      clearTimeout(timer);
      sock.end(`${JSON.stringify({ error })}\n`);
    };
    const onHead = (b: Buffer) => {
      head = Buffer.concat([head, b]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) {
        if (head.length > MAX_HEAD) refuse('bad_request');
        return;
      }
      sock.off('data', onHead);
      sock.pause();
      const rest = head.subarray(nl + 1);
      let req: { from?: unknown; grant?: unknown; host?: unknown; port?: unknown };
      try {
        req = JSON.parse(head.subarray(0, nl).toString('utf8'));
      } catch {
        return refuse('bad_request');
      }
      const { from, grant, host, port } = req;
      if (typeof from !== 'string' || typeof grant !== 'string' || typeof host !== 'string' || host.length > 255 || typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
        return refuse('bad_request');
      }
      if (!verifyRelayGrant(opts.tokenHash, from, grant)) {
        opts.log.warn({ from: from.slice(0, 16) }, 'a relay request with no valid grant was refused');
        return refuse('unauthorized');
      }
      dialTcp(host, port, opts.egress, DIAL_TIMEOUT_MS, undefined, { dnsTimeoutMs: 5000, keepAliveMs: 30_000, localAddress: opts.egressAddress }).then(
        (out) => {
          clearTimeout(timer);
          if (sock.destroyed) return void out.destroy();
          open.add(sock);
          sock.once('close', () => open.delete(sock));
          out.on('error', () => sock.destroy());
          sock.on('error', () => out.destroy());
          out.on('close', () => sock.destroy());
          sock.on('close', () => out.destroy());
          for (const s of [sock, out]) {
            s.setTimeout(IDLE_MS, () => {
              sock.destroy();
              out.destroy();
            });
          }
          sock.write('OK\n');
          if (rest.length) out.write(rest);
          sock.pipe(out);
          out.pipe(sock);
          sock.resume();
        },
        (err: Error) => refuse(err instanceof EgressRefused ? 'forbidden' : 'unreachable'),
      );
    };
    sock.on('data', onHead);
  });
  return Object.assign(server, {
    /** Stops listening and cuts every relayed connection. */
    shutdown: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of all) s.destroy();
      }),
  });
}
