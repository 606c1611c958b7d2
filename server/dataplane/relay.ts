// A relayed connection: the client side, the outbound side, one Flow per direction, and the
// lease that ties it to a session. Used by the VLESS inbounds and the HTTP proxy alike.
import type { Socket } from 'node:net';
import type { Socket as UdpSocket } from 'node:dgram';
import { Flow } from './flow.ts';
import type { ClientSide } from './sides.ts';
import type { WriteDone } from './flow.ts';
import { type CloseReason, isCapReason } from './close-reason.ts';
import type { Lease } from './lease.ts';
import { type ConnHandle, nowMs } from './meters.ts';
import { randomUUID } from 'node:crypto';
import type { ConnectionView, Transport } from './support.ts';

const GRACE_MS = 5000;
const MAX_PENDING = 256 * 1024;
const UDP_MAX_FRAME = 65535 + 2;

export class Connection implements ConnHandle {
  readonly client: ClientSide;
  lease: Lease | undefined;
  closed = false;
  closeReason: CloseReason | undefined;
  /** When a byte last moved either way (performance.now()): the idle timeout and ping checks read it. */
  lastActive = performance.now();
  private outbound: Socket | undefined;
  private udp: UdpSocket | undefined;
  private up: Flow | undefined;
  private down: Flow | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private clientEnded = false;
  private timers: NodeJS.Timeout[] = [];
  private udpBuf: Buffer = Buffer.alloc(0);
  private readonly onClosed: ((c: Connection) => void) | undefined;
  /** Support's view (support.ts): how it came in, where it goes (set by the inbound), since when it relays. */
  transport: Transport = 'tcp';
  destination: { host: string; port: number } | undefined;
  private openedAt = 0;
  private readonly id = randomUUID();
  /** Receives client bytes until the relay starts (header parsing). */
  preamble: ((buf: Buffer) => void) | undefined;
  /** A relay with no stream of its own (a SOCKS5 UDP association): runs once on close; the
   *  client's end of its stream (the control connection) closes the connection. */
  cleanup: (() => void) | undefined;

  constructor(client: ClientSide, onClosed?: (c: Connection) => void) {
    this.client = client;
    this.onClosed = onClosed;
    client.bind({
      data: (b) => this.fromClient(b),
      end: () => this.clientEnd(),
      close: () => this.close('client_closed'),
    });
  }

  timer(ms: number, fn: () => void): void {
    const t = setTimeout(fn, ms);
    t.unref();
    this.timers.push(t);
  }

  private fromClient(b: Buffer): void {
    if (this.closed) return;
    this.lastActive = performance.now();
    if (this.up) {
      if (this.udp) this.udpFrames(b);
      else this.up.push(b);
    } else if (this.preamble) {
      this.preamble(b);
    } else {
      this.hold(b);
    }
  }

  /** Keeps bytes that arrive while the outbound is being dialled (bounded; client paused). */
  hold(b: Buffer): void {
    if (b.length === 0) return;
    this.pending.push(b);
    this.pendingBytes += b.length;
    if (this.pendingBytes > MAX_PENDING) this.client.pause();
  }

  private clientEnd(): void {
    this.clientEnded = true;
    // UDP has no half-close: the client finishing its stream ends the association.
    if (this.udp || this.cleanup) return this.close('client_end');
    if (this.up && this.outbound) {
      const out = this.outbound;
      this.up.finish(() => out.end());
    }
  }

  /** Destination bytes read with the dialler's pooled buffers; `release` recycles the buffer once written. */
  fromOutbound(b: Buffer, release?: WriteDone): void {
    this.lastActive = performance.now();
    this.down?.push(b, release);
  }

  /** Starts a relay with no stream of its own (a SOCKS5 UDP association, `cleanup`): counted, listed for support. */
  startOwn(): void {
    if (this.closed || !this.lease) return;
    this.lease.commit();
    this.openedAt = Date.now();
  }

  /** Starts relaying TCP; `preface` goes to the client first and is not counted (VLESS response header). */
  startTcp(out: Socket, preface?: Buffer): void {
    const lease = this.lease;
    if (this.closed || !lease) {
      out.destroy();
      return;
    }
    lease.commit();
    this.openedAt = Date.now();
    this.outbound = out;
    this.preamble = undefined;
    if (preface) this.client.write(preface);
    this.up = new Flow(lease, 'up', { write: (b) => out.write(b), onWritable: (cb) => { out.once('drain', cb); } }, this.client);
    this.down = new Flow(lease, 'down', this.client, out);
    out.on('data', (b: Buffer) => this.fromOutbound(b));
    out.on('end', () => this.down?.finish(() => this.endClient()));
    out.on('error', () => { /* close follows */ });
    out.on('close', () => {
      // A clean end is handled by 'end' (the client is ended after queued data is delivered).
      if (!out.readableEnded) this.close('outbound_closed');
    });
    this.flushPending();
    if (this.clientEnded) this.clientEnd();
  }

  /** Starts relaying VLESS UDP: 2-byte length-prefixed datagrams both ways. */
  startUdp(udp: UdpSocket, preface?: Buffer): void {
    const lease = this.lease;
    if (this.closed || !lease) {
      try { udp.close(); } catch { /* closed */ }
      return;
    }
    lease.commit();
    this.openedAt = Date.now();
    this.udp = udp;
    this.preamble = undefined;
    if (preface) this.client.write(preface);
    const noop = { pause() {}, resume() {} };
    this.up = new Flow(lease, 'up', { write: (b) => { udp.send(b); return true; }, onWritable: (cb) => setImmediate(cb) }, noop, { atomic: true, maxQueue: 64 });
    const client = this.client;
    this.down = new Flow(lease, 'down', {
      write: (b) => {
        const len = Buffer.allocUnsafe(2);
        len.writeUInt16BE(b.length);
        client.write(len);
        return client.write(b);
      },
      onWritable: (cb) => client.onWritable(cb),
    }, noop, { atomic: true, maxQueue: 64 });
    udp.on('message', (m: Buffer) => this.fromOutbound(m));
    udp.on('error', () => this.close('udp_error'));
    this.flushPending();
    if (this.clientEnded) this.close('client_end');
  }

  private udpFrames(b: Buffer): void {
    this.udpBuf = this.udpBuf.length ? Buffer.concat([this.udpBuf, b]) : b;
    while (this.udpBuf.length >= 2) {
      const len = this.udpBuf.readUInt16BE(0);
      if (this.udpBuf.length < 2 + len) break;
      const payload = this.udpBuf.subarray(2, 2 + len);
      this.udpBuf = this.udpBuf.subarray(2 + len);
      if (len > 0) this.up?.push(Buffer.from(payload));
    }
    if (this.udpBuf.length > UDP_MAX_FRAME) this.close('udp_frame');
  }

  private flushPending(): void {
    const p = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    for (const b of p) this.fromClient(b);
    this.client.resume();
  }

  private endClient(): void {
    if (this.closed) return;
    this.client.end();
    this.timer(GRACE_MS, () => this.close('grace'));
  }

  /** What support sees of this connection while it relays (undefined before the destination is reached). */
  view(): ConnectionView | undefined {
    const lease = this.lease;
    if (!lease || !this.openedAt || this.closed) return undefined;
    const now = nowMs();
    return {
      id: this.id,
      transport: this.transport,
      client_address: this.client.remote,
      destination: this.destination ?? { host: '', port: 0 },
      uploaded_bytes: lease.moved.up,
      downloaded_bytes: lease.moved.down,
      upload_speed: lease.rate.up.perSecond(now),
      download_speed: lease.rate.down.perSecond(now),
      opened_at: new Date(this.openedAt).toISOString(),
    };
  }

  close(reason: CloseReason): void {
    if (this.closed) return;
    this.closed = true;
    this.closeReason = reason;
    for (const t of this.timers) clearTimeout(t);
    this.up?.stop();
    this.down?.stop();
    if (isCapReason(reason) || reason === 'paused' || reason === 'client_disabled' || reason === 'shutdown') {
      // Cut by the runtime: reset, so the bytes still queued in our buffers and the kernel's send
      // buffer are dropped instead of draining to the client for seconds (a slow reader got ~7 MB
      // after a pause with a graceful close). Those bytes were counted when written: the counters
      // may exceed what the client received by what was in flight, never the other way round.
      this.client.reset();
    } else {
      this.client.destroy();
    }
    this.outbound?.destroy();
    if (this.udp) {
      try { this.udp.close(); } catch { /* closed */ }
    }
    this.cleanup?.();
    this.lease?.release(reason);
    this.onClosed?.(this);
  }
}
