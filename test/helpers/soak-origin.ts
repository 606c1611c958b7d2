// A loopback HTTP origin of its own for one session: whatever reaches this port was sent for that
// session (by v2ray over VLESS or curl through a node's proxy, relayed or not), so the bytes its
// sockets read and wrote are what the session's counters must show: uploaded = what the origin
// read (client → destination), downloaded = what it wrote (destination → client), HTTP heads
// included (a tunnel carries them as payload).
//   GET /down?n=BYTES&rate=BYTES_PER_S  answers n bytes, paced (10 ms ticks)
//   POST /up                            reads the body, answers its length
// Downloads are paced and each chunk waits for the previous one to reach the kernel, so little is
// ever in flight: what a cut connection leaves unread in socket buffers (written here, never
// relayed nor counted) stays a chunk or so, far below the 1 MiB bound the soak asserts.
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';

export interface SessionOrigin {
  port: number;
  url(path: string): string;
  /** Bytes read and written so far, open sockets included. */
  totals(): { read: number; written: number };
  /** Connections seen. */
  connections(): number;
  close(): Promise<void>;
}

const FILL = Buffer.alloc(256 * 1024, 0x5a);
const TICK_MS = 10;

export async function startSessionOrigin(): Promise<SessionOrigin> {
  let read = 0;
  let written = 0;
  let seen = 0;
  const open = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://origin');
    if (req.method === 'POST' && u.pathname === '/up') {
      let n = 0;
      req.on('data', (b: Buffer) => (n += b.length));
      req.on('end', () => res.end(String(n)));
      return;
    }
    if (u.pathname !== '/down') {
      res.statusCode = 404;
      res.end('no');
      return;
    }
    const total = Math.max(0, Math.min(Number(u.searchParams.get('n') ?? 0), 1 << 30));
    const rate = Math.max(100_000, Number(u.searchParams.get('rate') ?? 2_000_000));
    const step = Math.min(FILL.length, Math.max(1024, Math.floor((rate * TICK_MS) / 1000)));
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
    let sent = 0;
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      if (res.destroyed || sent >= total) {
        clearInterval(timer);
        if (!res.destroyed) res.end();
        return;
      }
      const n = Math.min(step, total - sent);
      sent += n;
      busy = true;
      res.write(FILL.subarray(0, n), () => (busy = false));
    }, TICK_MS);
    res.on('close', () => clearInterval(timer));
  });
  server.keepAliveTimeout = 1000;
  server.on('connection', (s: Socket) => {
    seen++;
    open.add(s);
    s.on('close', () => {
      open.delete(s);
      read += s.bytesRead;
      written += s.bytesWritten;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (p) => `http://127.0.0.1:${port}${p}`,
    totals: () => {
      let r = read;
      let w = written;
      for (const s of open) {
        r += s.bytesRead;
        w += s.bytesWritten;
      }
      return { read: r, written: w };
    },
    connections: () => seen,
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}
