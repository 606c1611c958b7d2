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
// compare with the entry's reports (takeCarried).
//
// Anyone can connect to this port, so until its grant is accepted a connection holds a slot of
// RelayGuard (capped in total and per source, over the cap destroyed at accept), must finish
// TLS within HANDSHAKE_MS and send its request line within HEAD_MS of being accepted, and is
// destroyed (never only half-closed) at once when refused: a refusal is one answer line, then
// the socket is gone as soon as it is written (at most LINGER_MS). After the grant: the dial
// has DIAL_TIMEOUT_MS, and no byte either way for IDLE_MS closes the connection.
import { createServer, type Server, type Socket } from 'node:net';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import { dialTcp, type OnData } from '../dataplane/outbound.ts';
import { EgressRefused, type EgressPolicy } from '../dataplane/egress.ts';
import { RelayNonces, verifyRelayGrant, type RelayCredentials } from '../dataplane/relay-grant.ts';
import { serveUdpAssociation } from './relay-udp.ts';
import { RelayGuard } from './relay-guard.ts';
import type { Logger } from '../domain.ts';

const HANDSHAKE_MS = 3000;
const HEAD_MS = 5000;
const LINGER_MS = 1000;
const DIAL_TIMEOUT_MS = 10_000;
const IDLE_MS = 300_000;
const MAX_HEAD = 4096;
/**
 * TLS 1.3 suites in the relay's order: AES-128-GCM first (OpenSSL's default puts AES-256 first). It
 * is a standard suite with 128-bit security, and it cut the relay's CPU per GiB by about 15 % on
 * each side (`npm run bench -- geo`); the entry is our own node, which offers all three. No TLS 1.2
 * suite is listed, so the relay speaks TLS 1.3 only (every node runs Node 24).
 */
export const RELAY_CIPHERS = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256';
/** Relayed connections open at once (dialling or piping); over it new ones are refused. */
const MAX_OPEN = 4096;
/**
 * Reads of the destination (up to 512 KiB each) a relayed connection may have waiting to be
 * encrypted and written before the destination is paused: two, so the next is read while one is
 * written (a TLS write completes one event-loop round later at the earliest; with one, the
 * destination stood still for that round after every read).
 */
const DOWN_QUEUE = 2;

export interface RelayServerOptions {
  cert: string;
  key: string;
  tokenHash: string;
  /** The cluster members (node ids, and `serve`) the control plane lists now: grants of others are refused. */
  entries?: () => ReadonlySet<string>;
  egress: EgressPolicy;
  /** Source addresses to leave from: the request's `slot` picks one (slot modulo their count), else round-robin. */
  egressAddresses?: string[];
  log: Logger;
}

/** Bytes carried for one entry and session hash since the last takeCarried. */
interface Tally {
  up: number;
  down: number;
  open: number;
}

/** What takeCarried returns: by entry, by session hash. */
export type Carried = Record<string, Record<string, { up: number; down: number }>>;

type Request = RelayCredentials & ({ udp?: false; host: string; port: number } | { udp: true }) & { slot?: number };

function parseRequest(line: Buffer): Request | null {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(line.toString('utf8'));
  } catch {
    return null;
  }
  const { from, exp, session, nonce, time, grant, host, port, slot, udp } = r ?? {};
  if (typeof from !== 'string' || from.length > 64 || typeof session !== 'string' || typeof nonce !== 'string' || typeof grant !== 'string') return null;
  if (typeof exp !== 'number' || typeof time !== 'number') return null;
  if (slot !== undefined && (typeof slot !== 'number' || !Number.isInteger(slot) || slot < 0)) return null;
  const creds = { from, exp, session, nonce, time, grant, ...(slot !== undefined ? { slot } : {}) };
  if (udp === true && host === undefined && port === undefined) return { ...creds, udp: true };
  if (udp !== undefined || typeof host !== 'string' || !host || host.length > 255) return null;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return null;
  return { ...creds, host, port };
}

/** Bytes carried per entry and session hash, until takeCarried hands them over. */
class Carriage {
  private readonly carried = new Map<string, Tally & { from: string; session: string }>();

  tally(from: string, session: string): Tally {
    const key = `${from}\u0000${session}`;
    let t = this.carried.get(key);
    if (!t) this.carried.set(key, (t = { from, session, up: 0, down: 0, open: 0 }));
    return t;
  }

  take(): Carried {
    const out: Carried = {};
    for (const [key, t] of this.carried) {
      if (t.up || t.down) (out[t.from] ??= {})[t.session] = { up: t.up, down: t.down };
      t.up = 0;
      t.down = 0;
      if (t.open <= 0) this.carried.delete(key);
    }
    return out;
  }
}

/** What every accepted connection shares. */
interface Listener {
  opts: RelayServerOptions;
  secureContext: SecureContext;
  guard: RelayGuard;
  nonces: RelayNonces;
  entries: () => ReadonlySet<string>;
  /** Relayed connections (dialling or piping). */
  open: Set<Socket>;
  /** Every accepted socket. */
  all: Set<Socket>;
  carriage: Carriage;
  /** The next source address of a request without a slot. */
  turn: number;
}

/** One accepted connection: TLS, then its request line within the time-outs, checked, then relayed. */
function accept(l: Listener, raw: Socket): void {
  raw.on('error', () => {});
  const release = l.guard.admit(raw.remoteAddress);
  if (!release) return void raw.destroy();
  const sock = new TLSSocket(raw, { isServer: true, secureContext: l.secureContext, ALPNProtocols: ['vad-relay'] });
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
  sock.once('secure', () => clearTimeout(handshakeTimer));
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
    if (!req.udp) return relay(l, sock, req, rest);
    const t = l.carriage.tally(req.from, req.session);
    t.open++;
    sock.once('close', () => t.open--);
    serveUdpAssociation(sock, rest, { egress: l.opts.egress, dial: { dnsTimeoutMs: 5000, keepAliveMs: 30_000 }, localAddress: sourceOf(l, req.slot), idleMs: IDLE_MS, tally: t });
  };
  sock.on('data', onHead);
}

/** The source address of a request: its slot's (slot modulo the addresses), else the next in turn. */
function sourceOf(l: Listener, slot: number | undefined): string | undefined {
  const addresses = l.opts.egressAddresses ?? [];
  return addresses.length ? addresses[(slot ?? l.turn++) % addresses.length] : undefined;
}

/**
 * Dials the destination, answers `OK`, then relays both ways, tallied for the entry: the
 * entry's bytes piped to the destination; the destination's read in the dialler's large pooled
 * buffers (outbound.ts) and written to the TLS socket as they come (each buffer recycled once
 * written), the destination paused while DOWN_QUEUE of them wait to be written.
 */
function relay(l: Listener, sock: TLSSocket, req: Request & { host: string; port: number }, rest: Buffer): void {
  const localAddress = sourceOf(l, req.slot);
  let down: OnData = () => {}; // set before any read: the dial resolves on connect, reads come later
  dialTcp(req.host, req.port, l.opts.egress, DIAL_TIMEOUT_MS, (b, release) => down(b, release), { dnsTimeoutMs: 5000, keepAliveMs: 30_000, localAddress }).then(
    (out) => {
      if (sock.destroyed) return void out.destroy();
      const t = l.carriage.tally(req.from, req.session);
      t.open++;
      let queued = 0;
      down = (b, release) => {
        t.down += b.length;
        if (++queued >= DOWN_QUEUE) out.pause();
        sock.write(b, (err) => {
          release(err);
          if (queued-- === DOWN_QUEUE && !err) out.resume();
        });
      };
      out.on('error', () => sock.destroy());
      sock.on('error', () => out.destroy());
      out.on('close', () => sock.destroy());
      sock.on('close', () => out.destroy());
      out.once('close', () => t.open--);
      for (const s of [sock, out]) {
        s.setTimeout(IDLE_MS, () => {
          sock.destroy();
          out.destroy();
        });
      }
      sock.on('data', (b: Buffer) => (t.up += b.length));
      out.on('end', () => sock.end());
      sock.write('OK\n');
      if (rest.length) {
        t.up += rest.length;
        out.write(rest);
      }
      sock.pipe(out);
      sock.resume();
    },
    (err: Error) => {
      const error = err instanceof EgressRefused ? 'forbidden' : 'unreachable';
      if (sock.destroyed) return;
      sock.end(`${JSON.stringify({ error })}\n`, () => sock.destroy());
      setTimeout(() => sock.destroy(), LINGER_MS).unref();
    },
  );
}

export function createRelayServer(opts: RelayServerOptions): Server & { shutdown(): Promise<void>; takeCarried(): Carried } {
  const l: Listener = {
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
