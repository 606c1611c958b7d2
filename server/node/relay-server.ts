// A node's geo relay listener (server/cluster/geo.ts): the exit of a geo-targeted proxy request
// that entered the cluster at another node or a `serve` process. TLS with the node's own
// self-signed certificate (pinned by the entry), then one request line
//   {"from","exp","session","nonce","time","grant","host","port"}\n
// whose grant (dataplane/relay-grant.ts) is checked against this node's token hash, the cluster
// members the control plane lists now, the destination and the nonces already used; then the
// destination is dialled under this node's egress policy and from its egress address, `OK\n` is
// answered and bytes are relayed both ways. A request `{"from",…,"grant","udp":true[,"slot"]}` (a
// UDP grant, relay-grant.ts: a TCP grant cannot open it) starts a UDP association instead
// (relay-udp.ts: datagrams framed over the stream, from the egress address the slot picks). The bytes are not counted on any session here (the
// entry counts them, once), but tallied per entry and session hash for the control plane to
// compare with the entry's reports (takeCarried). An entry that asks for HTTP/2 (ALPN `h2`) sends
// its TCP requests as streams of one connection instead (relay-mux.ts), each with its own grant.
//
// Anyone can connect to this port, so until its grant is accepted a connection holds a slot of
// RelayGuard (capped in total and per source, over the cap destroyed at accept), must finish
// TLS within HANDSHAKE_MS and send its request line within HEAD_MS of being accepted, and is
// destroyed (never only half-closed) at once when refused: a refusal is one answer line, then
// the socket is gone as soon as it is written (at most LINGER_MS). After the grant: the dial
// has DIAL_TIMEOUT_MS, and no byte either way for IDLE_MS closes the connection.
import { createServer, type Server, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';
import { RelayNonces, verifyRelayGrant } from '../dataplane/relay-grant.ts';
import { serveUdpAssociation } from './relay-udp.ts';
import { RelayGuard } from './relay-guard.ts';
import { Carriage, IDLE_MS, MAX_OPEN, parseRequest, relayTcp, sourceOf, type Answer, type Carried, type Listener, type RelayServerOptions } from './relay-exit.ts';
import { RELAY_MUX_ALPN, serveMux } from './relay-mux.ts';

export type { Carried, RelayServerOptions } from './relay-exit.ts';

const HANDSHAKE_MS = 3000;
const HEAD_MS = 5000;
const LINGER_MS = 1000;
const MAX_HEAD = 4096;
/**
 * TLS 1.3 suites in the relay's order: AES-128-GCM first (OpenSSL's default puts AES-256 first). It
 * is a standard suite with 128-bit security, and it cut the relay's CPU per GiB by about 15 % on
 * each side (`npm run bench -- geo`); the entry is our own node, which offers all three. No TLS 1.2
 * suite is listed, so the relay speaks TLS 1.3 only (every node runs Node 24).
 */
export const RELAY_CIPHERS = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256';

/** The listener's state, with every socket it accepted (cut at shutdown). */
type Accepting = Listener & { all: Set<Socket> };

/**
 * One accepted connection: TLS, then its request line within the time-outs, checked, then
 * relayed; or, when the entry chose HTTP/2 (ALPN), many requests as streams (relay-mux.ts), the
 * first of them granted within the same time-outs.
 */
function accept(l: Accepting, raw: Socket): void {
  raw.on('error', () => {});
  const release = l.guard.admit(raw.remoteAddress);
  if (!release) return void raw.destroy();
  const sock = new TLSSocket(raw, { isServer: true, secureContext: l.secureContext, ALPNProtocols: [RELAY_MUX_ALPN, 'vad-relay'] });
  const kill = () => {
    clearTimeout(handshakeTimer);
    clearTimeout(headTimer);
    release();
    sock.destroy();
    raw.destroy();
  };
  const handshakeTimer = setTimeout(() => (l.guard.refused('handshake_timeout'), kill()), HANDSHAKE_MS);
  const headTimer = setTimeout(() => (l.guard.refused('head_timeout'), kill()), HEAD_MS);
  l.all.add(raw);
  raw.once('close', () => (l.all.delete(raw), kill()));
  sock.once('close', kill);
  sock.on('error', kill);
  sock.once('secure', () => {
    clearTimeout(handshakeTimer);
    if (sock.alpnProtocol !== RELAY_MUX_ALPN) return void sock.on('data', onHead);
    const authenticated = () => {
      clearTimeout(headTimer);
      release();
    };
    serveMux(l, sock, { authenticated, kill });
  });
  const refuse = (error: string) => {
    l.guard.refused(error);
    clearTimeout(headTimer);
    release();
    setTimeout(kill, LINGER_MS).unref();
    sock.end(`${JSON.stringify({ error })}\n`, kill);
  };
  let head = Buffer.alloc(0);
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
    const req = parseRequest(head.subarray(0, nl));
    if (!req) return refuse('bad_request');
    const verdict = verifyRelayGrant(l.opts.tokenHash, l.entries(), req, req.udp ? { kind: 'udp' } : { kind: 'tcp', host: req.host, port: req.port }, l.nonces);
    if (verdict !== 'ok') return refuse(verdict);
    if (l.open.size >= MAX_OPEN) return refuse('busy');
    // Authenticated: its slot goes back; the dial and the idle time-out bound it from now on.
    clearTimeout(headTimer);
    release();
    l.open.add(sock);
    sock.once('close', () => l.open.delete(sock));
    if (!req.udp) return relayTcp(l, sock, req, rest, answerOn(sock));
    const t = l.carriage.tally(req.from, req.session);
    t.open++;
    sock.once('close', () => t.open--);
    serveUdpAssociation(sock, rest, { egress: l.opts.egress, dial: { dnsTimeoutMs: 5000, keepAliveMs: 30_000 }, localAddress: sourceOf(l, req.slot), idleMs: IDLE_MS, tally: t });
  };
}

/** The answers of a request on a connection of its own: `OK`, or its error, and the socket is gone. */
function answerOn(sock: TLSSocket): Answer {
  return {
    ok: () => sock.write('OK\n'),
    fail: (error) => {
      sock.end(`${JSON.stringify({ error })}\n`, () => sock.destroy());
      setTimeout(() => sock.destroy(), LINGER_MS).unref();
    },
  };
}

export function createRelayServer(opts: RelayServerOptions): Server & { shutdown(): Promise<void>; takeCarried(): Carried } {
  const l: Accepting = {
    opts,
    secureContext: createSecureContext({ cert: opts.cert, key: opts.key, ciphers: RELAY_CIPHERS, honorCipherOrder: true }),
    guard: new RelayGuard(opts.log),
    nonces: new RelayNonces(),
    entries: opts.entries ?? (() => new Set<string>()),
    open: new Set(),
    all: new Set(),
    carriage: new Carriage(),
    turn: 0,
  };
  const server = createServer((raw) => accept(l, raw));
  return Object.assign(server, {
    /** Stops listening and cuts every connection, relayed or not. */
    shutdown: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of l.all) s.destroy();
      }),
    /** Bytes carried since the last call, by entry and session hash (reported to the control plane). */
    takeCarried: (): Carried => l.carriage.take(),
  });
}
