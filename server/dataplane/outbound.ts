// Dialling destinations: DNS resolution and the egress policy first, then a TCP connect with a
// timeout; or a connected UDP socket for VLESS UDP.
import { connect, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { resolveDestination, type EgressPolicy } from './egress.ts';

/** Read size for destination sockets: larger than the default 64 KiB, so fewer syscalls per GB. */
const READ_SIZE = 256 * 1024;

/**
 * Dials a TCP destination. With `onData`, reads go straight to it (socket 'data' events are not
 * used) in READ_SIZE buffers; socket.pause()/resume() still control reading.
 */
export async function dialTcp(host: string, port: number, policy: EgressPolicy, timeoutMs: number, onData?: (b: Buffer) => void): Promise<Socket> {
  const { address } = await resolveDestination(host, policy);
  return new Promise((resolve, reject) => {
    const onread = onData
      ? { buffer: () => Buffer.allocUnsafeSlow(READ_SIZE), callback: (n: number, buf: Uint8Array) => { onData(Buffer.from(buf.buffer, buf.byteOffset, n)); return true; } }
      : undefined;
    const sock = connect({ host: address, port, allowHalfOpen: true, noDelay: true, ...(onread ? { onread } : {}) });
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

export async function dialUdp(host: string, port: number, policy: EgressPolicy, timeoutMs: number): Promise<UdpSocket> {
  const { address, family } = await resolveDestination(host, policy);
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
