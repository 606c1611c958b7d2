// One direction of a relayed connection: takes chunks from a source, lets the byte caps and the
// token buckets decide how much may go and when, writes to a sink, and counts what was written.
// Backpressure: while a chunk waits (shaping) or the sink is full, the source is paused, so the
// server holds at most one chunk plus the sink's high-water mark per direction.
import type { Lease } from './lease.ts';
import type { Dir } from './meters.ts';

/** Called once the sink has flushed a write (err set when it failed). */
export type WriteDone = (err?: Error | null) => void;

export interface Sink {
  /** Writes; false when the sink is full (wait for onWritable). `done`, when given, runs once `buf` is no longer needed. */
  write(buf: Buffer, done?: WriteDone): boolean;
  onWritable(cb: () => void): void;
}

export interface Source {
  pause(): void;
  resume(): void;
}

/** Longest single sleep of a shaped flow, so that a limit change is seen in time. */
const MAX_WAIT_STEP_MS = 200;
/** How often a flow whose node waits for a grant looks again (grants come every 250 ms). */
const GRANT_POLL_MS = 50;

export class Flow {
  private readonly lease: Lease;
  private readonly dir: Dir;
  private readonly sink: Sink;
  private readonly src: Source;
  /** Datagrams: never split; a datagram that does not fit a cap is dropped. */
  private readonly atomic: boolean;
  private queue: Buffer[] = [];
  /** Release callbacks of the queued chunks (same order as queue). */
  private queueDone: (WriteDone | undefined)[] = [];
  private busy = false;
  private srcPaused = false;
  private finishCb: (() => void) | undefined;
  private readonly maxQueue: number;
  stopped = false;

  constructor(lease: Lease, dir: Dir, sink: Sink, src: Source, opts: { atomic?: boolean; maxQueue?: number } = {}) {
    this.lease = lease;
    this.dir = dir;
    this.sink = sink;
    this.src = src;
    this.atomic = opts.atomic ?? false;
    this.maxQueue = opts.maxQueue ?? Infinity;
  }

  /** `done` (optional) runs when the sink has flushed the whole chunk; never when it is dropped. */
  push(chunk: Buffer, done?: WriteDone): void {
    if (this.stopped || chunk.length === 0) return;
    if (this.busy) {
      if (this.queue.length >= this.maxQueue) return; // datagrams: drop rather than buffer
      this.queue.push(chunk);
      this.queueDone.push(done);
      this.pauseSrc();
      return;
    }
    this.run(chunk, done);
  }

  /** The source has ended: cb runs once everything queued was written. */
  finish(cb: () => void): void {
    if (!this.busy && this.queue.length === 0) cb();
    else this.finishCb = cb;
  }

  stop(): void {
    this.stopped = true;
    this.queue = [];
    this.queueDone = [];
    this.finishCb = undefined;
  }

  private run(chunk: Buffer | undefined, done: WriteDone | undefined): void {
    while (chunk && !this.stopped) {
      const lease = this.lease;
      let piece = chunk;
      let rest: Buffer | undefined;
      if (lease.shapes(this.dir)) {
        // Speed limits: pieces small enough that one wait stays short, each reserved first.
        if (!this.atomic) {
          const max = lease.maxPiece(this.dir);
          if (piece.length > max) piece = chunk.subarray(0, max);
        }
        rest = piece.length < chunk.length ? chunk.subarray(piece.length) : undefined;
        const wait = lease.reserve(this.dir, piece.length);
        if (wait >= 1) {
          this.block();
          this.waitThen(performance.now() + wait, lease.shapeEpoch(this.dir), () => this.afterWait(piece, rest, done));
          return;
        }
      }
      const sent = this.send(piece, rest, done);
      if (this.stopped || sent === 'held') return;
      if (sent === 'full') {
        this.block();
        this.sink.onWritable(() => this.continueWith(rest, done));
        return;
      }
      if (rest) {
        chunk = rest;
      } else {
        chunk = this.queue.shift();
        done = this.queueDone.shift();
      }
    }
    if (!this.stopped) this.idle();
  }

  /**
   * Writes a piece (`done` goes with it when it is the chunk's last) as far as the caps allow:
   * 'full' when the sink is full; 'held' when a cluster node waits for its next grant (what is
   * not sent yet goes on after GRANT_POLL_MS, the source stays paused).
   */
  private send(piece: Buffer, rest: Buffer | undefined, done: WriteDone | undefined): 'sent' | 'full' | 'held' {
    const last = rest ? undefined : done;
    let n = this.lease.grant(this.dir, piece.length);
    if (this.atomic && n < piece.length) n = 0;
    if (n < piece.length && this.lease.awaitsGrant(this.dir, n)) {
      if (this.atomic) return 'sent'; // a datagram is dropped, not held
      if (n > 0) {
        this.sink.write(piece.subarray(0, n));
        this.lease.account(this.dir, n);
        if (this.stopped) return 'held';
      }
      const held = piece.subarray(n);
      this.block();
      setTimeout(() => this.afterWait(held, rest, done), GRANT_POLL_MS);
      return 'held';
    }
    if (n === 0) {
      // A cap is reached: the runtime closes the connection (account() enforces); stop here.
      this.stopped = true;
      this.lease.capReached();
      return 'sent';
    }
    const whole = n === piece.length;
    const ok = whole ? this.sink.write(piece, last) : this.sink.write(piece.subarray(0, n));
    this.lease.account(this.dir, n);
    if (!whole) this.stopped = true;
    return ok ? 'sent' : 'full';
  }

  /**
   * Waits until `deadline` in steps of at most MAX_WAIT_STEP_MS. When a rate changed meanwhile
   * (limits apply to live connections within 1 s), the wait is cut to what the buckets' debt
   * needs at the new rates: a limit raised or removed lets a waiting piece go at once.
   */
  private waitThen(deadline: number, epoch: number, fn: () => void): void {
    const step = () => {
      if (this.stopped) return;
      let left = deadline - performance.now();
      const now = this.lease.shapeEpoch(this.dir);
      if (now !== epoch) {
        epoch = now;
        left = Math.min(left, this.lease.debtWait(this.dir));
        deadline = performance.now() + left;
      }
      if (left >= 1) setTimeout(step, Math.min(left, MAX_WAIT_STEP_MS));
      else fn();
    };
    setTimeout(step, Math.min(deadline - performance.now(), MAX_WAIT_STEP_MS));
  }

  private afterWait(piece: Buffer, rest: Buffer | undefined, done: WriteDone | undefined): void {
    if (this.stopped) return;
    const sent = this.send(piece, rest, done);
    if (this.stopped || sent === 'held') return;
    if (sent === 'full') {
      this.sink.onWritable(() => this.continueWith(rest, done));
      return;
    }
    this.continueWith(rest, done);
  }

  private continueWith(rest: Buffer | undefined, done: WriteDone | undefined): void {
    if (this.stopped) return;
    this.busy = false;
    if (rest) this.run(rest, done);
    else this.run(this.queue.shift(), this.queueDone.shift());
  }

  private pauseSrc(): void {
    if (!this.srcPaused) {
      this.srcPaused = true;
      this.src.pause();
    }
  }

  private block(): void {
    this.busy = true;
    this.pauseSrc();
  }

  private idle(): void {
    this.busy = false;
    if (this.srcPaused) {
      this.srcPaused = false;
      this.src.resume();
    }
    const cb = this.finishCb;
    if (cb) {
      this.finishCb = undefined;
      cb();
    }
  }
}
