// The entry's multiplexed relay: per relay, one TLS connection (relay-tls.ts: pinned, resumed)
// speaking HTTP/2, each relayed TCP request one stream of it. A request so costs a stream instead of
// a TLS handshake (the handshake was most of a short relayed request's cost at both ends), and
// HTTP/2 gives each stream its own flow control: a slow client holds its own stream only.
//
// A stream is `POST /relay` with the request (grant and all, as a connection of its own sends it:
// relay-dial.ts) in its `vad-relay` header; the exit (node/relay-mux.ts) answers `200` and the
// stream's bodies are the bytes both ways, or refuses with its error in `vad-error`. A connection
// carries at most MUX_STREAMS streams at once (another is opened past it), and is closed after
// IDLE_MS without any; one that leaves a stream unanswered and then a PING too is dropped (TCP
// keep-alive on it as well). A relay that does not offer HTTP/2 is dialled a connection per request for
// RAW_ONLY_MS before it is asked again.
import { connect as h2connect, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import type { Socket } from 'node:net';
import type { OnData } from './outbound.ts';
import { GatheredReads } from './relay-reads.ts';
import { connectPinned, dialStep, relayKey, RelayedOutbound, RelayRefused, tcpRequest, withSlot, type RelayRoute } from './relay-tls.ts';

/** The protocol the relay's TLS negotiates (ALPN) for a multiplexed connection. */
export const RELAY_MUX_ALPN = 'h2';
/** Streams one connection carries at once (the exit allows twice as many, for dials racing a new connection). */
export const MUX_STREAMS = 1000;
/**
 * Both ends' HTTP/2 settings: a window of 1 MiB per stream (the default 64 KiB held a bulk stream
 * to a window per round trip), frames of up to 1 MiB, no server push.
 */
export const MUX_SETTINGS = { initialWindowSize: 1 << 20, maxFrameSize: 1 << 20, maxHeaderListSize: 16 * 1024, enablePush: false };
/** The connection's own window across its streams. */
export const MUX_SESSION_WINDOW = 32 << 20;
/** What HTTP/2 may hold for a connection (MB): its streams' windows and headers. */
export const MUX_SESSION_MEMORY = 64;
const IDLE_MS = 60_000;
const RAW_ONLY_MS = 10 * 60_000;
const PING_MS = 5000;
const KEEPALIVE_MS = 30_000;

interface Mux {
  session: ClientHttp2Session;
  streams: number;
  /** A PING is out (checkAlive). */
  pinging?: boolean;
}

const muxes = new Map<string, Mux[]>();
const opening = new Map<string, Promise<Mux | null>>();
/** Relays that chose a connection per request (they do not offer HTTP/2), until when. */
const rawOnly = new Map<string, number>();

function forget(key: string, mux: Mux): void {
  const left = (muxes.get(key) ?? []).filter((m) => m !== mux);
  if (left.length) muxes.set(key, left);
  else muxes.delete(key);
}

/** A new multiplexed connection to the relay; null when the relay chose a connection per request. */
async function openMux(route: RelayRoute, key: string, timeoutMs: number): Promise<Mux | null> {
  const tls = await connectPinned(route, [RELAY_MUX_ALPN, 'vad-relay'], timeoutMs);
  if (tls.alpnProtocol !== RELAY_MUX_ALPN) {
    tls.destroy();
    rawOnly.set(key, Date.now() + RAW_ONLY_MS);
    return null;
  }
  tls.setNoDelay(true);
  tls.setKeepAlive(true, KEEPALIVE_MS);
  const session = h2connect(`https://${route.host}:${route.port}`, { createConnection: () => tls, settings: MUX_SETTINGS, maxSessionMemory: MUX_SESSION_MEMORY });
  const mux: Mux = { session, streams: 0 };
  session.on('error', () => {}); // its streams see it, and 'close' follows
  session.once('connect', () => session.setLocalWindowSize(MUX_SESSION_WINDOW));
  session.once('close', () => forget(key, mux));
  session.once('goaway', () => forget(key, mux));
  session.setTimeout(IDLE_MS, () => {
    if (mux.streams === 0) session.close();
  });
  session.unref(); // a kept connection does not hold the process; its streams' clients do
  muxes.set(key, [...(muxes.get(key) ?? []), mux]);
  return mux;
}

/** A connection to the relay with room for one more stream (opened if none has); null: connections per request. */
async function muxFor(route: RelayRoute, timeoutMs: number): Promise<Mux | null> {
  // Per entry as well: a connection belongs to the entry of its first stream (several entries may share a process).
  const key = `${route.from}|${relayKey(route)}`;
  if ((rawOnly.get(key) ?? 0) > Date.now()) return null;
  for (let tries = 0; tries < 3; tries++) {
    const room = muxes.get(key)?.find((m) => m.streams < MUX_STREAMS && !m.session.closed && !m.session.destroyed);
    if (room) return room;
    let p = opening.get(key);
    if (!p) {
      p = openMux(route, key, timeoutMs).finally(() => opening.delete(key));
      opening.set(key, p);
    }
    const mux = await p;
    if (!mux || (mux.streams < MUX_STREAMS && !mux.session.closed)) return mux;
  }
  throw new Error(`the relay at node ${route.node} has no room for another stream`);
}

/**
 * After a stream went unanswered: the connection is asked for a PING, and dropped if that is not
 * answered within PING_MS either (an exit that vanished without closing, a path that stopped
 * carrying), so the next request opens another rather than waiting on this one too.
 */
function checkAlive(mux: Mux): void {
  if (mux.pinging || mux.session.destroyed) return;
  mux.pinging = true;
  const timer = setTimeout(() => mux.session.destroy(), PING_MS);
  const sent = mux.session.ping((err) => {
    mux.pinging = false;
    clearTimeout(timer);
    if (err) mux.session.destroy();
  });
  if (!sent) {
    clearTimeout(timer);
    mux.session.destroy();
  }
}

/** The exit's answer to a stream: resolved on `200`, rejected with its refusal, its closing, or the time-out. */
function answered(route: RelayRoute, mux: Mux, stream: ClientHttp2Stream, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = dialStep(route, timeoutMs, stream, reject, () => checkAlive(mux));
    stream.once('close', step.closed);
    stream.once('response', (headers: IncomingHttpHeaders) => {
      const status = Number(headers[':status']);
      if (status !== 200) {
        const code = String(headers['vad-error'] ?? '');
        return step.fail(new RelayRefused(route.node, code, `status ${status}`));
      }
      if (!step.done()) return;
      stream.off('close', step.closed);
      resolve();
    });
  });
}

/**
 * Dials host:port as a stream of the relay's multiplexed connection for the session `sessionId`.
 * Resolves with the destination as an outbound socket (its reads to `onData` when given, else
 * 'data' events), or null when the relay takes a connection per request instead.
 */
export async function dialMux(route: RelayRoute, sessionId: string, host: string, port: number, timeoutMs: number, onData?: OnData): Promise<Socket | null> {
  const started = Date.now();
  const mux = await muxFor(route, timeoutMs);
  if (!mux) return null;
  let stream: ClientHttp2Stream;
  try {
    stream = mux.session.request({ ':method': 'POST', ':path': '/relay', 'vad-relay': JSON.stringify(withSlot(route, tcpRequest(route, sessionId, host, port))) }, { endStream: false });
  } catch {
    return null; // the connection is closing (the exit's GOAWAY came in between): a connection of its own
  }
  mux.streams++;
  stream.once('close', () => mux.streams--);
  stream.on('error', () => {}); // 'close' follows
  await answered(route, mux, stream, timeoutMs - (Date.now() - started));
  stream.pause();
  // The stream's chunks (a piece of a frame each, as TLS records came) are gathered into large
  // pooled buffers, handed on once per event-loop round: one write to the client, not one a chunk.
  const reads = new GatheredReads();
  const out = new RelayedOutbound(stream, () => reads.flush());
  reads.attach(onData ?? ((d) => out.emit('data', d)));
  // After the caller has taken the socket over (its then() runs first), unless it paused it.
  setImmediate(() => {
    stream.on('data', (b: Buffer) => reads.copyIn(b));
    if (!out.paused) stream.resume();
  });
  return out as unknown as Socket;
}
