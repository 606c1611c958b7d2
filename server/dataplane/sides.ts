// The client side of a relayed connection, over a TCP/TLS socket or a WebSocket, behind one
// small interface (sink + source + lifecycle) so the relay code does not care which it is.
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import type { Sink, Source } from './flow.ts';

export interface ClientHandlers {
  data(buf: Buffer): void;
  /** The peer half-closed (TCP only). */
  end(): void;
  close(): void;
}

export interface ClientSide extends Sink, Source {
  bind(h: ClientHandlers): void;
  /** Graceful close after pending writes. */
  end(): void;
  destroy(): void;
  /** Abortive close: a TCP reset, so nothing still queued (ours or the kernel's) reaches the client. */
  reset(): void;
  /** WebSocket only: sends a ping; returns whether the previous one was answered. */
  ping?(): boolean;
  readonly remote: string;
  /** The local address the client reached (TCP and TLS sockets). */
  readonly local?: string;
}

/**
 * Closes a socket with a TCP RST (SO_LINGER 0), dropping what the kernel still holds to send. A
 * TLS socket has no TCP handle of its own: its underlying socket (`_parent`) is reset. Anything
 * that cannot be reset is destroyed.
 */
export function resetSocket(sock: Duplex): void {
  // A socket whose end() is still shutting down (a FIN queued behind a full send buffer, or in the
  // same tick) must not be reset: libuv refuses the reset of a stream with a shutdown pending
  // (EINVAL) while Node has already marked the handle closing, so it is never closed. The fd leaks
  // for good and, at exit, Node's handle cleanup spins at 100 % CPU waiting for it (seen as a test
  // process that kept spinning after its tests passed). A plain destroy closes it; the FIN is
  // already on its way, so nothing of the graceful close is lost.
  if (sock.writableEnded && !sock.writableFinished) {
    sock.destroy();
    return;
  }
  const candidates = [sock, (sock as { _parent?: Duplex })._parent];
  for (const s of candidates) {
    const reset = (s as Socket | undefined)?.resetAndDestroy;
    if (typeof reset !== 'function' || (s as Socket).destroyed) continue;
    try {
      reset.call(s);
      if (s !== sock) sock.destroy();
      return;
    } catch {
      // not a TCP handle (a TLS wrap): try the next
    }
  }
  sock.destroy();
}

export function socketSide(sock: Socket | Duplex & { remoteAddress?: string; setNoDelay?: (b: boolean) => void }): ClientSide {
  return {
    remote: (sock as Socket).remoteAddress ?? '?',
    ...((sock as Socket).localAddress ? { local: (sock as Socket).localAddress } : {}),
    bind(h) {
      sock.on('data', (b: Buffer) => h.data(b));
      sock.on('end', () => h.end());
      sock.on('close', () => h.close());
      sock.on('error', () => { /* 'close' follows */ });
    },
    write: (buf, done) => sock.write(buf, done),
    onWritable: (cb) => { sock.once('drain', cb); },
    pause: () => { sock.pause(); },
    resume: () => { sock.resume(); },
    end: () => { sock.end(); },
    destroy: () => { sock.destroy(); },
    reset: () => resetSocket(sock),
  };
}

const WS_HIGH_WATER = 1 << 20;
const WS_CLOSE_LINGER_MS = 1000;

/** `raw`: the upgraded socket under the WebSocket, reset on an abortive close. */
export function wsSide(ws: WebSocket, remote: string, raw?: Duplex): ClientSide {
  let waiter: (() => void) | undefined;
  let ponged = true;
  ws.on('pong', () => { ponged = true; });
  const sent = () => {
    if (waiter && ws.bufferedAmount < WS_HIGH_WATER) {
      const w = waiter;
      waiter = undefined;
      w();
    }
  };
  return {
    remote,
    bind(h) {
      ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
        if (Buffer.isBuffer(data)) h.data(data);
        else if (Array.isArray(data)) h.data(Buffer.concat(data));
        else h.data(Buffer.from(data));
      });
      ws.on('close', () => {
        const w = waiter;
        waiter = undefined;
        h.close();
        w?.();
      });
      ws.on('error', () => { /* 'close' follows */ });
    },
    write(buf, done) {
      if (ws.readyState !== WebSocket.OPEN) return true;
      ws.send(buf, { binary: true }, done ? (err) => { sent(); done(err); } : sent);
      return ws.bufferedAmount < WS_HIGH_WATER;
    },
    onWritable(cb) {
      if (ws.bufferedAmount < WS_HIGH_WATER || ws.readyState !== WebSocket.OPEN) setImmediate(cb);
      else waiter = cb;
    },
    pause: () => { if (ws.readyState === WebSocket.OPEN) ws.pause(); },
    resume: () => { if (ws.readyState === WebSocket.OPEN) ws.resume(); },
    // The destination finished: close after a linger, as v2ray's own server does. A VLESS-over-ws
    // client such as v2ray treats the close frame as an error and drops what it has not yet
    // forwarded, so closing the moment the last byte is written truncates downloads (measured:
    // 7 of 12 downloads of 3 MB lost their tail without the linger, 0 of 10 with it).
    end: () => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const linger = setTimeout(() => { if (ws.readyState === WebSocket.OPEN) ws.close(1000); }, WS_CLOSE_LINGER_MS);
      ws.once('close', () => clearTimeout(linger));
    },
    destroy: () => { ws.terminate(); },
    reset: () => {
      if (raw) resetSocket(raw);
      ws.terminate();
    },
    ping: () => {
      const answered = ponged;
      ponged = false;
      if (ws.readyState === WebSocket.OPEN) ws.ping();
      return answered;
    },
  };
}
