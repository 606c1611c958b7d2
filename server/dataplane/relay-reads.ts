// The entry's reads of a relay connection (relay-dial.ts), gathered into large chunks. TLS hands
// its decrypted bytes over one record at a time (16 KiB at most): passed on one by one, each was
// a fresh buffer (the garbage collector) and a write of its own to the client (measured on a
// relayed download: 2.4-2.8 CPU-s per GiB at the entry, against 0.5 for the same download
// leaving from the entry; gathered, 1.0-1.1). Here the records are decrypted one after the other
// into a buffer of the dialler's pools (socket `onread`, outbound.ts), and what came in since the
// last hand-over goes on as ONE chunk at the end of the event loop's round (setImmediate), or at
// once when the buffer is about full. Buffers are sized as the dialler's are: SMALL_READ to begin
// with and while the traffic is small (a round under one record), LARGE_READ once one filled up.
// A buffer goes back to its pool once every chunk cut from it has been released (the sink flushed
// it) and nothing more is read into it; a chunk never released (dropped, a closed connection)
// leaves its buffer to the collector.
//
// Until a sink is attached (the answer line is being read, or the caller has not taken the
// socket yet), chunks wait in order; attach() hands them over first.
import { LARGE_READ, SMALL_READ, giveBack, takeBuffer, type OnData } from './outbound.ts';

/** Below this room left (one full TLS record and a little), a buffer is handed over and a new one taken. */
const MIN_ROOM = 16 * 1024 + 256;

interface Block {
  buf: Uint8Array;
  /** Chunks cut from it not yet released. */
  refs: number;
  /** Nothing more is read into it. */
  sealed: boolean;
  /** A write of one of its chunks failed: it stays out of the pool. */
  lost: boolean;
}

export class GatheredReads {
  private block: Block | undefined;
  /** What of the block was handed over ([0, start)) and read ([0, end)). */
  private start = 0;
  private end = 0;
  private sink: OnData | undefined;
  private waiting: Array<[Buffer, (err?: Error | null) => void]> = [];
  private scheduled = false;
  /** The size of the next buffer. */
  private size = SMALL_READ;
  /** The socket `onread` option: reads go into the current block, after what it holds. */
  readonly onread = {
    buffer: (): Uint8Array => this.room(),
    callback: (n: number): boolean => this.read(n),
  };

  /** Reads a chunk that came another way (an HTTP/2 stream's data) as the socket `onread` would have read it: copied in. */
  copyIn(b: Buffer): void {
    for (let at = 0; at < b.length; ) {
      const room = this.room();
      const n = Math.min(room.byteLength, b.length - at);
      room.set(b.subarray(at, at + n));
      at += n;
      this.read(n);
    }
  }

  /** Sends chunks to `sink` from now on, those waiting first. */
  attach(sink: OnData): void {
    this.sink = sink;
    const waiting = this.waiting;
    this.waiting = [];
    for (const [b, release] of waiting) sink(b, release);
  }

  /** Keeps chunks from now on until the next attach(). */
  detach(): void {
    this.sink = undefined;
  }

  /** Hands over what was read and not yet passed on (before the socket's 'end' is passed on). */
  flush(): void {
    const b = this.block;
    if (!b || this.end === this.start) return;
    const chunk = Buffer.from(b.buf.buffer, b.buf.byteOffset + this.start, this.end - this.start);
    this.start = this.end;
    b.refs++;
    let released = false;
    const release = (err?: Error | null) => {
      if (released) return;
      released = true;
      if (err) b.lost = true;
      b.refs--;
      this.recycle(b);
    };
    if (this.sink) this.sink(chunk, release);
    else this.waiting.push([chunk, release]);
  }

  private room(): Uint8Array {
    if (!this.block) {
      this.block = { buf: takeBuffer(this.size), refs: 0, sealed: false, lost: false };
      this.start = this.end = 0;
    }
    return this.block.buf.subarray(this.end);
  }

  private read(n: number): boolean {
    const b = this.block;
    if (!b) return true;
    this.end += n;
    const full = b.buf.byteLength - this.end < MIN_ROOM;
    // Full: it goes on at once, the next buffer a large one (a bulk transfer). A large buffer
    // while the traffic is small: it goes on at once, the next buffer a small one.
    if (full || b.buf.byteLength !== this.size) {
      if (full) this.size = LARGE_READ;
      this.flush();
      b.sealed = true;
      this.block = undefined; // the socket's next read goes into room(): a new buffer
      this.recycle(b);
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        if (this.end - this.start < MIN_ROOM) this.size = SMALL_READ;
        this.flush();
      });
    }
    return true;
  }

  private recycle(b: Block): void {
    if (b.sealed && b.refs === 0 && !b.lost) {
      b.lost = true; // once
      giveBack(b.buf);
    }
  }
}
