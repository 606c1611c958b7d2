// The exit's side of a multiplexed relay connection: HTTP/2 over the relay's TLS, when the entry
// asked for it (ALPN; dataplane/relay-mux-dial.ts), so that a request costs the entry and the exit
// a stream instead of a TLS handshake. Each stream is one TCP request: `POST /relay` whose
// `vad-relay` header is the request line a connection of its own sends (relay-server.ts), grant
// and all, checked the same way (one nonce per stream); answered `200`, then the stream's bodies
// are the bytes both ways (relay-exit.ts); or refused, its error in `vad-error` and the stream
// ended. HTTP/2's flow control is per stream: a slow stream holds only itself.
//
// The connection keeps its RelayGuard slot, and its HEAD_MS time-out, until a stream's grant is
// accepted; a refused stream before that closes the connection, as a refused request line does.
// Once granted, the connection is that entry's: a stream from another entry is refused. Limits:
// 2 × MUX_STREAMS streams at once, headers up to 16 KiB, a stream idle IDLE_MS closed, and the
// connection closed after IDLE_MS without a stream. UDP associations take a connection of their own.
import { performServerHandshake, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { MUX_SESSION_MEMORY, MUX_SESSION_WINDOW, MUX_SETTINGS, MUX_STREAMS } from '../dataplane/relay-mux-dial.ts';
import { verifyRelayGrant } from '../dataplane/relay-grant.ts';
import { IDLE_MS, MAX_OPEN, parseRequest, relayTcp, type Listener } from './relay-exit.ts';

export { RELAY_MUX_ALPN } from '../dataplane/relay-mux-dial.ts';

const LINGER_MS = 1000;
const STATUS: Record<string, number> = { bad_request: 400, busy: 503, forbidden: 403, unreachable: 502 };

/** What the accepting connection lends: its slot given back once granted, and its end. */
export interface MuxHooks {
  authenticated(): void;
  kill(): void;
}

/** Serves the streams of a TLS connection whose entry chose HTTP/2. */
export function serveMux(l: Listener, sock: TLSSocket, hooks: MuxHooks): void {
  // node's tls.Server marks a server socket done connecting when its handshake is (and HTTP/2
  // waits for that mark before it reads); this socket was made by hand (relay-server.ts).
  (sock as TLSSocket & { secureConnecting: boolean }).secureConnecting = false;
  sock.setNoDelay(true);
  const session = performServerHandshake(sock, { settings: { ...MUX_SETTINGS, maxConcurrentStreams: 2 * MUX_STREAMS }, maxSessionMemory: MUX_SESSION_MEMORY, maxHeaderListPairs: 16 });
  session.on('error', hooks.kill);
  session.once('close', hooks.kill);
  session.once('connect', () => session.setLocalWindowSize(MUX_SESSION_WINDOW));
  let entry: string | undefined;
  let streams = 0;
  session.setTimeout(IDLE_MS, () => {
    if (streams === 0) session.close();
  });
  session.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    streams++;
    stream.once('close', () => streams--);
    stream.on('error', () => {}); // 'close' follows
    // A stream the entry has reset meanwhile takes no answer (responding would throw).
    const respond = (headers: Record<string, string | number>, endStream: boolean) => {
      if (stream.closed || stream.destroyed) return;
      try {
        stream.respond(headers, { endStream });
      } catch {
        stream.destroy();
      }
    };
    const refuse = (error: string) => respond({ ':status': STATUS[error] ?? 403, 'vad-error': error }, true);
    const line = headers['vad-relay'];
    const req = headers[':method'] === 'POST' && typeof line === 'string' ? parseRequest(line) : null;
    const verdict = !req || req.udp || (entry !== undefined && req.from !== entry) ? 'bad_request' : verifyRelayGrant(l.opts.tokenHash, l.entries(), req, { kind: 'tcp', host: req.host, port: req.port }, l.nonces);
    const error = verdict !== 'ok' ? verdict : l.open.size >= MAX_OPEN ? 'busy' : '';
    if (error || !req || req.udp) {
      l.guard.refused(error);
      refuse(error);
      if (entry === undefined) {
        session.close();
        setTimeout(hooks.kill, LINGER_MS).unref();
      }
      return;
    }
    if (entry === undefined) {
      entry = req.from;
      hooks.authenticated();
    }
    l.open.add(stream);
    stream.once('close', () => l.open.delete(stream));
    relayTcp(l, stream, req, Buffer.alloc(0), { ok: () => respond({ ':status': 200 }, false), fail: refuse });
  });
}
