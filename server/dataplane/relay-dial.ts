// Dialling a destination through another node's geo relay listener: a TLS connection
// to the exit node, its certificate checked against the pinned SHA-256 before anything is sent,
// then one request line (`{"from","exp","session","nonce","time","grant","host","port"}` JSON: a
// single-use grant for this session and destination, made from the route's relay key by
// relay-grant.ts) and one answer line (`OK`, or `{"error"}`), then raw bytes both ways. The bytes are counted here, on the entry's session
// (the exit node counts nothing), so traffic is counted once. A TCP relay's reads are gathered
// into large chunks (relay-reads.ts) before they go on to the client.
import { connect as tlsConnect, createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { GeoRoute } from './api.ts';
import type { OnData } from './outbound.ts';
import { EgressRefused } from './egress.ts';
import { signRelayRequest } from './relay-grant.ts';
import { GatheredReads } from './relay-reads.ts';

const MAX_ANSWER = 4096;
/** Relays whose last TLS session is kept for resumption (the oldest forgotten first). */
const MAX_SESSIONS = 1024;

/**
 * What every relay dial shares: one client context (a context of its own per dial was a tenth of
 * the entry's CPU on short requests), and per relay (host, port and pin) the TLS session it last
 * issued on a connection whose certificate matched the pin, offered by the next dial. A resumed
 * handshake skips the relay's certificate and its signature, and only the relay that issued the
 * ticket can complete it; a relay that cannot (restarted, or another one) makes a full handshake,
 * checked against the pin again.
 */
let context: SecureContext | undefined;
const tlsSessions = new Map<string, Buffer>();
const sessionKey = (route: Extract<GeoRoute, { via: 'relay' }>) => `${route.host}|${route.port}|${route.pcs}`;

function remember(key: string, session: Buffer): void {
  tlsSessions.delete(key);
  if (tlsSessions.size >= MAX_SESSIONS) tlsSessions.delete(tlsSessions.keys().next().value!);
  tlsSessions.set(key, session);
}

/**
 * The SHA-256 of the certificate a TLS connection's peer presented, lower-case hex without colons
 * (as links' `pcs` and tls/certificates.ts pinOf write it); '' when it presented none.
 */
export function peerPin(socket: TLSSocket): string {
  return (socket.getPeerCertificate().fingerprint256 ?? '').replaceAll(':', '').toLowerCase();
}

/**
 * The relayed destination as the relay sees an outbound socket: reads go to `onData` when given
 * (else 'data' events), writes and backpressure go to the TLS socket.
 */
class RelayedOutbound extends EventEmitter {
  readableEnded = false;
  private readonly tls: TLSSocket;
  constructor(tls: TLSSocket, reads: GatheredReads) {
    super();
    this.tls = tls;
    tls.on('drain', () => this.emit('drain'));
    tls.on('end', () => {
      reads.flush(); // what was read goes on before the end
      this.readableEnded = true;
      this.emit('end');
    });
    tls.on('error', (err) => this.emit('error', err));
    tls.on('close', () => this.emit('close'));
  }
  write(b: Buffer): boolean {
    return this.tls.write(b);
  }
  end(): void {
    this.tls.end();
  }
  destroy(): void {
    this.tls.destroy();
  }
  pause(): void {
    this.tls.pause();
  }
  resume(): void {
    this.tls.resume();
  }
}

/** The relay's refusal of a request: `code` is its error (`forbidden`: the exit's egress policy). */
export class RelayRefused extends Error {
  readonly code: string;

  constructor(node: string, code: string, line: string) {
    super(`the relay at node ${node} refused: ${code || line.slice(0, 80)}`);
    this.code = code;
  }
}

/**
 * Opens a TLS connection to the route's relay, checks its certificate against the pin, sends
 * the request line and reads the answer line. Resolves with the connection, paused and without
 * listeners, and the bytes that came after the answer; rejects when the relay cannot be reached
 * in time, has another certificate, or refuses (RelayRefused). With `reads`, the connection's
 * reads go to it (its sink detached once the answer is read; 'data' is never emitted).
 */
export function openRelay(route: Extract<GeoRoute, { via: 'relay' }>, request: object, timeoutMs: number, reads?: GatheredReads): Promise<{ tls: TLSSocket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    context ??= createSecureContext({ minVersion: 'TLSv1.3' });
    const key = sessionKey(route);
    const session = tlsSessions.get(key);
    // `onread` is passed on to the socket by tls.connect (node's lib/_tls_wrap.js), though @types/node does not list it
    const tls = tlsConnect({ host: route.host, port: route.port, secureContext: context, rejectUnauthorized: false, ALPNProtocols: ['vad-relay'], ...(session ? { session } : {}), ...(reads ? { onread: reads.onread } : {}) });
    // Only a session of a connection whose relay was checked is kept: issued before the check, it waits for it.
    let verified = false;
    let issued: Buffer | undefined;
    tls.on('session', (b: Buffer) => (verified ? remember(key, b) : (issued = b)));
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      tls.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error(`the relay at node ${route.node} did not answer in time`)), timeoutMs);
    tls.once('error', fail);
    tls.once('close', () => fail(new Error(`the relay at node ${route.node} closed`)));
    tls.once('secureConnect', () => {
      // A resumed session proves the relay holds the secret of a session made with a checked one
      // (node's TLS does not keep the certificate of a resumed session); any other, the pin.
      if (!tls.isSessionReused() && peerPin(tls) !== route.pcs) {
        tlsSessions.delete(key);
        return fail(new Error(`the relay at node ${route.node} has another certificate than its pin`));
      }
      verified = true;
      if (issued) remember(key, issued);
      tls.write(`${JSON.stringify({ ...request, ...(route.slot !== undefined ? { slot: route.slot } : {}) })}\n`);
    });
    let head = Buffer.alloc(0);
    const onHead = (b: Buffer) => {
      head = Buffer.concat([head, b]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) {
        if (head.length > MAX_ANSWER) fail(new Error('the relay answered nonsense'));
        return;
      }
      if (reads) reads.detach();
      else tls.off('data', onHead);
      tls.pause();
      const line = head.subarray(0, nl).toString('utf8');
      if (line !== 'OK') {
        let code = '';
        try {
          code = String((JSON.parse(line) as { error?: unknown }).error ?? '');
        } catch { /* the line itself is reported */ }
        return fail(new RelayRefused(route.node, code, line));
      }
      settled = true;
      clearTimeout(timer);
      tls.removeAllListeners('error');
      tls.removeAllListeners('close');
      resolve({ tls, rest: head.subarray(nl + 1) });
    };
    if (reads) {
      reads.attach((b, release) => {
        onHead(b); // copied (concat)
        release();
      });
    } else tls.on('data', onHead);
  });
}

/** Dials host:port through the route's relay for the session `sessionId` (its grant names both). */
export async function dialRelay(route: Extract<GeoRoute, { via: 'relay' }>, sessionId: string, host: string, port: number, timeoutMs: number, onData?: OnData): Promise<Socket> {
  let opened: { tls: TLSSocket; rest: Buffer };
  const reads = new GatheredReads();
  try {
    opened = await openRelay(route, { ...signRelayRequest(route, sessionId, host, port), host, port }, timeoutMs, reads);
  } catch (err) {
    throw err instanceof RelayRefused && err.code === 'forbidden' ? new EgressRefused(`${host} refused by the exit node's egress policy`) : err;
  }
  const { tls, rest } = opened;
  const out = new RelayedOutbound(tls, reads);
  // Without onData, 'data' listeners may keep a chunk: its buffer is never recycled.
  const deliver: OnData = onData ?? ((d) => out.emit('data', d));
  // After the caller has taken the socket over (its then() runs first): the bytes that came
  // with the answer, then the rest as it comes.
  setImmediate(() => {
    if (rest.length) deliver(rest, () => {});
    reads.attach(deliver);
    tls.resume();
  });
  return out as unknown as Socket;
}
