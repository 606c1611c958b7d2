// Dialling destinations: DNS resolution (bounded by a timeout) and the egress policy first,
// then a TCP connect with a timeout; or a connected UDP socket for VLESS UDP.
import { connect, isIP, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { resolveDestination, type EgressPolicy } from './egress.ts';
import type { DnsLookup } from './api.ts';

/** How destinations are dialled: the name lookup, the longest it may take, and the TCP
 *  keep-alive delay of destination sockets (so a destination that vanished is noticed). */
export interface DialOptions {
  lookup?: DnsLookup;
  dnsTimeoutMs: number;
  keepAliveMs: number;
  /** Local address outbound TCP connections leave from (a node's --egress-address); default any. */
  localAddress?: string;
}

export const DEFAULT_DNS_TIMEOUT_MS = 5000;
export const DEFAULT_KEEPALIVE_MS = 30_000;
const DEFAULT_DIAL: DialOptions = { dnsTimeoutMs: DEFAULT_DNS_TIMEOUT_MS, keepAliveMs: DEFAULT_KEEPALIVE_MS };
const systemLookup: DnsLookup = (name) => lookup(name, { verbatim: true });

/**
 * The address to dial for `host`: a literal as is, a name through the lookup within the DNS
 * timeout (a resolver that never answers must not hold a connection, and its session, for ever).
 * The egress policy is then applied to the address (egress.ts).
 */
export async function resolveHost(host: string, policy: EgressPolicy, dns: DialOptions): Promise<{ address: string; family: 4 | 6 }> {
  if (isIP(host)) return resolveDestination(host, policy);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`DNS lookup of ${host} timed out after ${dns.dnsTimeoutMs} ms`)), dns.dnsTimeoutMs);
  });
  try {
    const r = await Promise.race([(dns.lookup ?? systemLookup)(host), timeout]);
    return resolveDestination(r.address, policy);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Read buffers for destination sockets, sized to the traffic: a connection starts with SMALL
 * buffers and moves to LARGE ones once a read fills its buffer (a bulk transfer), back to SMALL
 * when a read comes in under SMALL. Large reads mean fewer syscalls and fewer chunks per GB
 * (measured: 64 KiB reads cost ~0.65 CPU-s/GB, 256 KiB ~0.52, 512 KiB ~0.43); idle connections
 * (each always holds one read buffer) keep only a small one.
 *
 * Buffers are recycled: a fresh buffer per read made the garbage collector the second-largest
 * cost of a download (external memory forces full collections; ~16% of the server's CPU). A
 * buffer goes back to its pool only once the sink has flushed it to the kernel (`release`,
 * passed as the write callback of the chunk's last piece); a buffer whose chunk is dropped, cut
 * by a cap or caught in a closing connection is simply left to the collector. Pools are shared
 * by all connections and bounded.
 */
export const SMALL_READ = 64 * 1024;
export const LARGE_READ = 512 * 1024;
const SMALL_POOL_MAX = 64; // 4 MiB
const LARGE_POOL_MAX = 16; // 8 MiB
const smallPool: Uint8Array[] = [];
const largePool: Uint8Array[] = [];

/** A read buffer of `size` (SMALL_READ or LARGE_READ) from its pool, or a new one. */
export function takeBuffer(size: number): Uint8Array {
  return (size === LARGE_READ ? largePool.pop() : smallPool.pop()) ?? Buffer.allocUnsafeSlow(size);
}

/** Puts a buffer no write holds any more back into its pool (others, and a full pool's, are left to the collector). */
export function giveBack(buf: Uint8Array): void {
  if (buf.byteLength === LARGE_READ) {
    if (largePool.length < LARGE_POOL_MAX) largePool.push(buf);
  } else if (buf.byteLength === SMALL_READ) {
    if (smallPool.length < SMALL_POOL_MAX) smallPool.push(buf);
  }
}

/** Receives one read: `b` stays valid until `release` is called (at most once, or never). */
export type OnData = (b: Buffer, release: (err?: Error | null) => void) => void;

/** onread options for a socket whose reads go to `onData` in pooled, adaptively sized buffers. */
function pooledReads(onData: OnData): { buffer: () => Uint8Array; callback: (n: number, buf: Uint8Array) => boolean } {
  let size = SMALL_READ;
  return {
    buffer: () => takeBuffer(size),
    callback: (n, buf) => {
      if (n === buf.byteLength) size = LARGE_READ;
      else if (n < SMALL_READ) size = SMALL_READ;
      let released = false;
      onData(Buffer.from(buf.buffer, buf.byteOffset, n), (err) => {
        if (released || err) return;
        released = true;
        giveBack(buf);
      });
      return true;
    },
  };
}

/**
 * Dials a TCP destination. With `onData`, reads go straight to it (socket 'data' events are not
 * used) in pooled buffers (see above); socket.pause()/resume() still control reading.
 */
export async function dialTcp(host: string, port: number, policy: EgressPolicy, timeoutMs: number, onData?: OnData, dial: DialOptions = DEFAULT_DIAL): Promise<Socket> {
  const { address } = await resolveHost(host, policy, dial);
  return new Promise((resolve, reject) => {
    const onread = onData ? pooledReads(onData) : undefined;
    const sock = connect({ host: address, port, allowHalfOpen: true, noDelay: true, keepAlive: true, keepAliveInitialDelay: dial.keepAliveMs, ...(dial.localAddress ? { localAddress: dial.localAddress } : {}), ...(onread ? { onread } : {}) });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error('connect timeout'));
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.removeListener('error', onError);
      resolve(sock);
    });
    const onError = (err: Error) => {
      clearTimeout(timer);
      sock.destroy();
      reject(err);
    };
    sock.once('error', onError);
  });
}

export async function dialUdp(host: string, port: number, policy: EgressPolicy, timeoutMs: number, dial: DialOptions = DEFAULT_DIAL): Promise<UdpSocket> {
  const { address, family } = await resolveHost(host, policy, dial);
  return new Promise((resolve, reject) => {
    const sock = createSocket(family === 6 ? 'udp6' : 'udp4');
    const timer = setTimeout(() => {
      sock.close();
      reject(new Error('udp connect timeout'));
    }, timeoutMs);
    sock.once('error', (err) => {
      clearTimeout(timer);
      try { sock.close(); } catch { /* closed */ }
      reject(err);
    });
    sock.connect(port, address, () => {
      clearTimeout(timer);
      sock.removeAllListeners('error');
      resolve(sock);
    });
  });
}
