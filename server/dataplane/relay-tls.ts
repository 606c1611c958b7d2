// The entry's TLS to another node's geo relay listener, whichever way requests then go over it
// (relay-dial.ts: one request per connection; relay-mux-dial.ts: many, as HTTP/2 streams): the
// relay's certificate checked against the route's pin before anything is sent, the TLS session it
// issued kept for the next dial, and what a relayed destination looks like to the relay.
import { connect as tlsConnect, createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { GeoRoute } from './api.ts';
import { signRelayRequest } from './relay-grant.ts';

export type RelayRoute = Extract<GeoRoute, { via: 'relay' }>;

/** Relays whose last TLS session is kept for resumption (the oldest forgotten first). */
const MAX_SESSIONS = 1024;
/**
 * A relay completes its TCP and TLS handshakes within this (or the dial's own time-out, when
 * shorter): a node that does not (hung, or its host gone) counts as not reached, so the proxy
 * tries another exit (proxy-admission.ts), rather than as a slow destination.
 */
export const RELAY_HANDSHAKE_MS = 3000;

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

/** A relay as dials know it: its address and the certificate it must show. */
export const relayKey = (route: RelayRoute): string => `${route.host}|${route.port}|${route.pcs}`;

/** A TCP request as the exit reads it (a request line or a stream's header): the signed grant and the destination. */
export function tcpRequest(route: RelayRoute, sessionId: string, host: string, port: number): object {
  return { ...signRelayRequest(route, sessionId, host, port), host, port };
}

/** A request as sent: with the route's slot, when the route has one. */
export const withSlot = (route: RelayRoute, request: object): object => (route.slot !== undefined ? { ...request, slot: route.slot } : request);

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
 * A TLS connection to the route's relay offering the application protocols `alpn`, resolved once
 * the relay is known to be the pinned one; rejected when it cannot be reached, does not complete
 * its handshakes within RELAY_HANDSHAKE_MS, closes, or shows another certificate. `onread` (a TCP relay's gathered reads, relay-reads.ts) takes the
 * connection's reads instead of 'data' events. The connection keeps a listener for 'error'.
 */
export function connectPinned(route: RelayRoute, alpn: string[], timeoutMs: number, onread?: object): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    context ??= createSecureContext({ minVersion: 'TLSv1.3' });
    const key = relayKey(route);
    const session = tlsSessions.get(key);
    // `onread` is passed on to the socket by tls.connect (node's lib/_tls_wrap.js), though @types/node does not list it
    const tls = tlsConnect({ host: route.host, port: route.port, secureContext: context, rejectUnauthorized: false, ALPNProtocols: alpn, ...(session ? { session } : {}), ...(onread ? { onread } : {}) });
    tls.on('error', () => {});
    // Only a session of a connection whose relay was checked is kept: issued before the check, it waits for it.
    let verified = false;
    let issued: Buffer | undefined;
    tls.on('session', (b: Buffer) => (verified ? remember(key, b) : (issued = b)));
    const ms = Math.min(timeoutMs, RELAY_HANDSHAKE_MS);
    const step = dialStep(route, ms, tls, (err) => reject(err instanceof RelayTimeout ? new Error(`the relay at node ${route.node} did not complete its handshake in ${ms} ms`) : err));
    tls.once('error', step.fail);
    tls.once('close', step.closed);
    tls.once('secureConnect', () => {
      // A resumed session proves the relay holds the secret of a session made with a checked one
      // (node's TLS does not keep the certificate of a resumed session); any other, the pin.
      if (!tls.isSessionReused() && peerPin(tls) !== route.pcs) {
        tlsSessions.delete(key);
        return step.fail(new Error(`the relay at node ${route.node} has another certificate than its pin`));
      }
      verified = true;
      if (issued) remember(key, issued);
      if (!step.done()) return;
      tls.off('error', step.fail);
      tls.off('close', step.closed);
      resolve(tls);
    });
  });
}

/**
 * One step of a dial (the TLS handshake, the answer line, a stream's answer), settled once:
 * `fail` destroys what the step opened and rejects with the error, `closed` fails it as closed by
 * the relay, `done` stops the clock (false when the step has failed already). Past `ms` (at least
 * 1), `onLate` runs and the step fails as not answered in time.
 */
export function dialStep(route: RelayRoute, ms: number, opened: { destroy(): void }, reject: (err: Error) => void, onLate?: () => void): { fail(err: Error): void; closed(): void; done(): boolean } {
  let settled = false;
  const fail = (err: Error) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    opened.destroy();
    reject(err);
  };
  const timer = setTimeout(() => {
    onLate?.();
    fail(new RelayTimeout(`the relay at node ${route.node} did not answer in time`));
  }, Math.max(1, ms));
  return {
    fail,
    closed: () => fail(new Error(`the relay at node ${route.node} closed`)),
    done: () => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      return true;
    },
  };
}

/** A dial step's time-out: the relay, or the destination it dials, is slow (not known to be gone). */
export class RelayTimeout extends Error {}

/** The relay's refusal of a request: `code` is its error (`forbidden`: the exit's egress policy). */
export class RelayRefused extends Error {
  readonly code: string;

  constructor(node: string, code: string, line: string) {
    super(`the relay at node ${node} refused: ${code || line.slice(0, 80)}`);
    this.code = code;
  }
}

/**
 * The relayed destination as the relay sees an outbound socket: writes and backpressure go to the
 * entry's side of the relay (a TLS connection, or an HTTP/2 stream); its reads are delivered by
 * the dialler (never as 'data' events of this object unless it emits them). `beforeEnd` runs when
 * the side ends, before 'end' is emitted (what was read goes on first).
 */
export class RelayedOutbound extends EventEmitter {
  readableEnded = false;
  /** Paused by its reader (a dialler starts delivering reads only if not). */
  paused = false;
  private readonly side: Duplex;
  constructor(side: Duplex, beforeEnd?: () => void) {
    super();
    this.side = side;
    side.on('drain', () => this.emit('drain'));
    side.on('end', () => {
      beforeEnd?.();
      this.readableEnded = true;
      this.emit('end');
    });
    side.on('error', (err) => this.emit('error', err));
    side.on('close', () => this.emit('close'));
  }
  write(b: Buffer): boolean {
    return this.side.write(b);
  }
  end(): void {
    this.side.end();
  }
  destroy(): void {
    this.side.destroy();
  }
  pause(): void {
    this.paused = true;
    this.side.pause();
  }
  resume(): void {
    this.paused = false;
    this.side.resume();
  }
}
