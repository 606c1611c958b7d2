// A small SOCKS5 client for the tests (written from RFC 1928/1929, not with the server's encoder):
// the handshake over a socket, byte by byte as a client sees it, and UDP ASSOCIATE datagrams.
import { connect, isIP, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';

/** Reads exactly n bytes (or rejects when the socket closes first). */
export function readN(s: Socket, n: number, timeoutMs = 5000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const t = setTimeout(() => done(new Error(`timed out reading ${n} bytes (got ${buf.length})`)), timeoutMs);
    const onData = (b: Buffer) => {
      buf = Buffer.concat([buf, b]);
      if (buf.length >= n) {
        done(undefined, buf.subarray(0, n));
        if (buf.length > n) s.unshift(buf.subarray(n)); // after our listener is gone
      }
    };
    const onClose = () => done(new Error(`closed after ${buf.length} of ${n} bytes`), undefined, buf);
    const done = (err?: Error, v?: Buffer, partial?: Buffer) => {
      clearTimeout(t);
      s.off('data', onData);
      s.off('end', onClose);
      s.off('close', onClose);
      s.pause();
      if (err) reject(Object.assign(err, { partial }));
      else resolve(v!);
    };
    s.on('data', onData);
    s.once('end', onClose);
    s.once('close', onClose);
    s.resume();
  });
}

/** ATYP ADDR PORT */
export function socksAddress(host: string, port: number): Buffer {
  const p = Buffer.from([port >> 8, port & 255]);
  if (isIP(host) === 4) return Buffer.concat([Buffer.from([1, ...host.split('.').map(Number)]), p]);
  return Buffer.concat([Buffer.from([3, host.length]), Buffer.from(host, 'latin1'), p]);
}

export interface SocksReply {
  rep: number;
  host: string;
  port: number;
}

/** Reads a reply: VER REP RSV ATYP (IPv4 or IPv6) BND.ADDR BND.PORT. */
export async function readReply(s: Socket): Promise<SocksReply> {
  const head = await readN(s, 4);
  const len = head[3] === 1 ? 4 : head[3] === 4 ? 16 : (await readN(s, 1))[0];
  const rest = await readN(s, len + 2);
  const addr = rest.subarray(0, len);
  const host = head[3] === 1 ? [...addr].join('.') : head[3] === 4 ? addr.toString('hex') : addr.toString('latin1');
  return { rep: head[1], host, port: rest.readUInt16BE(len) };
}

export function open(port: number, host = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, host, () => resolve(s));
    s.once('error', reject);
  });
}

/**
 * Greeting and credentials: resolves with the socket after a successful authentication, or
 * with the method byte / auth status that refused it.
 */
export async function socksAuth(s: Socket, user: string, pass: string): Promise<{ ok: true } | { ok: false; method?: number; status?: number }> {
  s.write(Buffer.from([5, 1, 2]));
  const m = await readN(s, 2);
  if (m[1] !== 2) return { ok: false, method: m[1] };
  const u = Buffer.from(user), p = Buffer.from(pass);
  s.write(Buffer.concat([Buffer.from([1, u.length]), u, Buffer.from([p.length]), p]));
  const a = await readN(s, 2);
  return a[1] === 0 ? { ok: true } : { ok: false, status: a[1] };
}

/** Authenticated request: the reply (and the socket, relaying after a success). */
export async function socksRequest(proxyPort: number, user: string, pass: string, cmd: number, host: string, port: number): Promise<{ s: Socket; reply: SocksReply }> {
  const s = await open(proxyPort);
  s.on('error', () => {});
  const auth = await socksAuth(s, user, pass);
  if (!auth.ok) throw new Error(`authentication refused: ${JSON.stringify(auth)}`);
  s.write(Buffer.concat([Buffer.from([5, cmd, 0]), socksAddress(host, port)]));
  return { s, reply: await readReply(s) };
}

/** Resolves when the socket has closed, with how long that took (ms) and what it received meanwhile. */
export function closed(s: Socket): Promise<{ ms: number; got: Buffer }> {
  const t0 = performance.now();
  const got: Buffer[] = [];
  s.on('data', (b: Buffer) => got.push(b));
  s.resume();
  return new Promise((r) => {
    if (s.destroyed) return r({ ms: 0, got: Buffer.alloc(0) });
    s.once('close', () => r({ ms: performance.now() - t0, got: Buffer.concat(got) }));
  });
}

/** A UDP socket speaking to an association's relay: send(payload to host:port), next() the answers' payloads. */
export async function udpClient(relayHost: string, relayPort: number): Promise<{ sock: UdpSocket; send(host: string, port: number, payload: Buffer, frag?: number): void; next(timeoutMs?: number): Promise<{ from: string; port: number; payload: Buffer } | undefined>; close(): void }> {
  const sock = createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  const queue: Buffer[] = [];
  let waiter: ((b: Buffer | undefined) => void) | undefined;
  sock.on('message', (m) => {
    if (waiter) { const w = waiter; waiter = undefined; w(m); } else queue.push(m);
  });
  return {
    sock,
    send(host, port, payload, frag = 0) {
      sock.send(Buffer.concat([Buffer.from([0, 0, frag]), socksAddress(host, port), payload]), relayPort, relayHost);
    },
    next(timeoutMs = 2000) {
      const m = queue.shift();
      const parse = (b: Buffer | undefined) => b && b[3] === 1 ? { from: [...b.subarray(4, 8)].join('.'), port: b.readUInt16BE(8), payload: b.subarray(10) } : undefined;
      if (m) return Promise.resolve(parse(m));
      return new Promise((resolve) => {
        const t = setTimeout(() => { waiter = undefined; resolve(undefined); }, timeoutMs);
        waiter = (b) => { clearTimeout(t); resolve(parse(b)); };
      });
    },
    close: () => sock.close(),
  };
}
