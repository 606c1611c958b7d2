// Dialling a destination through another node's geo relay listener. A TCP request goes as a stream
// of the HTTP/2 connection the entry keeps to that relay (relay-mux-dial.ts); to a relay that does
// not speak it, and for a UDP association (relay-udp-dial.ts), on a TLS connection of its own
// (relay-tls.ts: the relay's certificate pinned, its session resumed): one request line
// (`{"from","exp","session","nonce","time","grant","host","port"}` JSON: a single-use grant for this
// session and destination, made from the route's relay key by relay-grant.ts) and one answer line
// (`OK`, or `{"error"}`), then raw bytes both ways. Either way the bytes are counted here, on the
// entry's session (the exit node counts nothing), so traffic is counted once. A TCP relay's reads
// on a connection of its own are gathered into large chunks (relay-reads.ts) before they go on to
// the client.
import type { TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import type { OnData } from './outbound.ts';
import { EgressRefused } from './egress.ts';
import { GatheredReads } from './relay-reads.ts';
import { connectPinned, dialStep, RelayedOutbound, RelayRefused, tcpRequest, withSlot, type RelayRoute } from './relay-tls.ts';
import { dialMux } from './relay-mux-dial.ts';

export { peerPin, RelayRefused } from './relay-tls.ts';

const MAX_ANSWER = 4096;

/**
 * Opens a TLS connection of its own to the route's relay (its certificate checked against the
 * pin), sends the request line and reads the answer line. Resolves with the connection, paused and
 * without listeners but a no-op 'error' one, and the bytes that came after the answer; rejects when
 * the relay cannot be reached in time, has another certificate, or refuses (RelayRefused). With
 * `reads`, the connection's reads go to it (its sink detached once the answer is read; 'data' is
 * never emitted).
 */
export async function openRelay(route: RelayRoute, request: object, timeoutMs: number, reads?: GatheredReads): Promise<{ tls: TLSSocket; rest: Buffer }> {
  const started = Date.now();
  const tls = await connectPinned(route, ['vad-relay'], timeoutMs, reads?.onread);
  return new Promise((resolve, reject) => {
    const step = dialStep(route, timeoutMs - (Date.now() - started), tls, reject);
    tls.on('error', step.fail);
    tls.on('close', step.closed);
    tls.write(`${JSON.stringify(withSlot(route, request))}\n`);
    let head = Buffer.alloc(0);
    const onHead = (b: Buffer) => {
      head = Buffer.concat([head, b]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) {
        if (head.length > MAX_ANSWER) step.fail(new Error('the relay answered nonsense'));
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
        return step.fail(new RelayRefused(route.node, code, line));
      }
      if (!step.done()) return;
      tls.removeAllListeners('error');
      tls.removeAllListeners('close');
      tls.on('error', () => {});
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

/** A TCP request on a connection of its own: the request line, the answer, then the destination's bytes. */
async function dialAlone(route: RelayRoute, sessionId: string, host: string, port: number, timeoutMs: number, onData?: OnData): Promise<Socket> {
  const reads = new GatheredReads();
  const { tls, rest } = await openRelay(route, tcpRequest(route, sessionId, host, port), timeoutMs, reads);
  const out = new RelayedOutbound(tls, () => reads.flush());
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

/**
 * Which way a request goes. A stream costs little to open but more per byte than a connection of
 * its own (HTTP/2 hands its reads over in small pieces: measured on a relayed download, about twice
 * the entry's CPU per GiB). So a session whose relayed request to an exit moved BULK_BYTES or more
 * takes connections of its own to that exit for BULK_MS after (each such request again extends it);
 * every other request is a stream.
 */
const BULK_BYTES = 4 << 20;
const BULK_MS = 60_000;
const MAX_BULKY = 10_000;
/** Session and exit → until when its requests take connections of their own. */
const bulky = new Map<string, number>();

function markBulky(key: string): void {
  bulky.delete(key);
  if (bulky.size >= MAX_BULKY) bulky.delete(bulky.keys().next().value!);
  bulky.set(key, Date.now() + BULK_MS);
}

function isBulky(key: string): boolean {
  const until = bulky.get(key);
  if (until === undefined) return false;
  if (until > Date.now()) return true;
  bulky.delete(key);
  return false;
}

/** `onData` counting what it is handed: at BULK_BYTES (and again at the close) the session is marked. */
function tapped(key: string, onData: OnData): { onData: OnData; closed(): void } {
  let n = 0;
  return {
    onData: (b, release) => {
      if (n < BULK_BYTES && (n += b.length) >= BULK_BYTES) markBulky(key);
      onData(b, release);
    },
    closed: () => (n >= BULK_BYTES ? markBulky(key) : undefined),
  };
}

/** Dials host:port through the route's relay for the session `sessionId` (its grant names both). */
export async function dialRelay(route: RelayRoute, sessionId: string, host: string, port: number, timeoutMs: number, onData?: OnData): Promise<Socket> {
  const key = `${sessionId}|${route.node}`;
  const tap = onData ? tapped(key, onData) : undefined;
  try {
    const out = (!isBulky(key) && (await dialMux(route, sessionId, host, port, timeoutMs, tap?.onData))) || (await dialAlone(route, sessionId, host, port, timeoutMs, tap?.onData));
    if (tap) out.once('close', tap.closed);
    return out;
  } catch (err) {
    throw err instanceof RelayRefused && err.code === 'forbidden' ? new EgressRefused(`${host} refused by the exit node's egress policy`) : err;
  }
}
