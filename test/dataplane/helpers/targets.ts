// Local destinations for tests and the benchmark: an HTTP server with random files that records
// the exact bytes each socket moved, a UDP echo server, and a free-port helper.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { createSocket } from 'node:dgram';
import { createHash, randomBytes } from 'node:crypto';
import { buildVlessHeader } from '../../../server/dataplane/vless-header.ts';

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const a = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return typeof a === 'object' && a ? a.port : 0;
}

export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export interface FileServer {
  port: number;
  url(path: string): string;
  files: Map<string, Buffer>;
  /** Bytes each finished socket read and wrote, in order of close. */
  sockets: { read: number; written: number }[];
  open: Set<Socket>;
  close(): Promise<void>;
}

/**
 * Serves /file/<name> from `files`; /slow/<name>?rate=<bytes/s> dribbles the file at that rate.
 * POST /sink swallows the body and answers its length.
 */
export async function startFileServer(files: Record<string, number>): Promise<FileServer> {
  const content = new Map<string, Buffer>();
  for (const [name, size] of Object.entries(files)) content.set(name, randomBytes(size));
  const sockets: { read: number; written: number }[] = [];
  const open = new Set<Socket>();
  const server = createHttpServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const [, kind, name] = u.pathname.split('/');
    if (req.method === 'POST' && kind === 'sink') {
      let n = 0;
      req.on('data', (b: Buffer) => { n += b.length; });
      req.on('end', () => res.end(String(n)));
      return;
    }
    const body = content.get(name ?? '');
    if (!body) { res.statusCode = 404; res.end('no'); return; }
    res.setHeader('Content-Length', body.length);
    res.setHeader('Content-Type', 'application/octet-stream');
    if (kind === 'slow') {
      const rate = Number(u.searchParams.get('rate') ?? 100000);
      let off = 0;
      const step = Math.max(1, Math.floor(rate / 20));
      const t = setInterval(() => {
        if (off >= body.length || res.destroyed) { clearInterval(t); if (!res.destroyed) res.end(); return; }
        res.write(body.subarray(off, off + step));
        off += step;
      }, 50);
      res.on('close', () => clearInterval(t));
      return;
    }
    res.end(body);
  });
  server.keepAliveTimeout = 500;
  server.on('connection', (s: Socket) => {
    open.add(s);
    s.on('close', () => { open.delete(s); sockets.push({ read: s.bytesRead, written: s.bytesWritten }); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (p) => `http://127.0.0.1:${port}${p}`,
    files: content,
    sockets,
    open,
    close: () => new Promise<void>((r) => { for (const s of open) s.destroy(); server.close(() => r()); }),
  };
}

export async function startUdpEcho(): Promise<{ port: number; close(): Promise<void> }> {
  const s = createSocket('udp4');
  s.on('message', (m, r) => s.send(m, r.port, r.address));
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return { port: s.address().port, close: () => new Promise<void>((r) => s.close(() => r())) };
}

/** A TCP echo server (for property tests' valid headers). */
export async function startTcpEcho(): Promise<{ port: number; server: Server; close(): Promise<void> }> {
  const socks = new Set<Socket>();
  const server = createServer((s) => { socks.add(s); s.on('close', () => socks.delete(s)); s.on('error', () => {}); s.pipe(s); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, server, close: () => new Promise<void>((r) => { for (const s of socks) s.destroy(); server.close(() => r()); }) };
}

/**
 * A raw VLESS tcp connection (no client program) to a loopback echo server: sends the header and
 * `hi`, then waits up to 3 s for the echo. `got()` counts the bytes answered (the 2-byte VLESS
 * answer head plus the echo: 4 when relayed); the socket stays open for the caller.
 */
export async function openVlessEcho(vlessTcpPort: number, id: string, echoPort: number, host = '127.0.0.1'): Promise<{ s: Socket; closed: Promise<void>; got: () => number }> {
  const s = connect(vlessTcpPort, host);
  s.on('error', () => {});
  let got = 0;
  s.on('data', (b: Buffer) => {
    got += b.length;
  });
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  s.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echoPort, address: '127.0.0.1' }), Buffer.from('hi')]));
  const end = performance.now() + 3000;
  while (got < 4 && performance.now() < end && !s.destroyed && s.readyState !== 'closed') await new Promise((r) => setTimeout(r, 5));
  return { s, closed, got: () => got };
}

/**
 * Sends `n` bytes (of `fill`) in one write through a VLESS-over-TCP connection to the echo server
 * and resolves with the open socket once they came back (plus the 2-byte VLESS response header);
 * rejects after 10 s, saying how much came back.
 */
export async function echoBytes(vlessTcpPort: number, id: string, echoPort: number, n: number, { host = '127.0.0.1', fill = 5 } = {}): Promise<Socket> {
  const s = connect(vlessTcpPort, host);
  s.on('error', () => {});
  let got = 0;
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`echo of ${n} bytes not back through ${host}:${vlessTcpPort} (got ${got})`)), 10_000);
    s.on('data', (b: Buffer) => {
      got += b.length;
      if (got >= n + 2) {
        clearTimeout(t);
        resolve();
      }
    });
    s.write(Buffer.concat([buildVlessHeader({ id, command: 'tcp', port: echoPort, address: '127.0.0.1' }), Buffer.alloc(n, fill)]));
  }).catch((e: unknown) => {
    s.destroy();
    throw e;
  });
  return s;
}

/**
 * Pushes `n` bytes through a VLESS-over-TCP connection to the echo server (so about as many come
 * back), 16 KiB every 5 ms; resolves with what came back once the connection closed (a cap, a
 * pause) or 1.5 s after the last write.
 */
export async function pushThroughEcho(vlessTcpPort: number, id: string, echoPort: number, n: number, host = '127.0.0.1'): Promise<number> {
  const conn = await openVlessEcho(vlessTcpPort, id, echoPort, host);
  const chunk = Buffer.alloc(16 * 1024, 5);
  for (let sent = 0; sent < n && !conn.s.destroyed; sent += chunk.length) {
    conn.s.write(chunk);
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.race([conn.closed, new Promise((r) => setTimeout(r, 1500))]);
  conn.s.destroy();
  return conn.got();
}
