// Usage history: traffic per session and node in time buckets, written without
// slowing the relay. The relay never waits on it:
//
//  - add() is called where counters are already saved: by the data plane's Reporter after each
//    counter save (every 500 ms per open session; the bytes that save added), and by the node
//    channel after a node's report was applied (its deltas, once per report). It only adds to
//    an in-memory map keyed by session, node and minute: no I/O, no allocation per byte.
//  - flush() writes the map in one batch (one transaction on SQLite, one statement on
//    PostgreSQL) every FLUSH_MS, adding to the minute buckets (several instances may add to the
//    same row). A failed write goes back into the map and is retried; the map is bounded.
//  - compact() keeps the table bounded, in batches of COMPACT_BATCH rows with the event loop
//    free between them (as http/retention.ts prunes events): minute rows older than a day are
//    rolled into hour rows, hours older than 90 days into day rows, days past the retention are
//    deleted. Every cut-off is aligned to the coarser step, so a coarse row only ever covers
//    time the finer step no longer does, and any range is answered exactly (server/routes/usage.ts).
//
// Time comes from `now()` (epoch ms), injectable so that tests can move a day or a year ahead.
import type { Logger } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import { USAGE_STEP_MS, type UsageAdd, type UsageStep } from '../store/store.ts';

const MINUTE = USAGE_STEP_MS.minute;
const HOUR = USAGE_STEP_MS.hour;
const DAY = USAGE_STEP_MS.day;

/** How long each step's rows are kept before they are rolled into the next (or deleted). */
export const USAGE_KEEP_MS: Record<UsageStep, number> = { minute: DAY, hour: 90 * DAY, day: 730 * DAY };
/** How often pending additions are written. */
export const USAGE_FLUSH_MS = 2_000;
/** How often compaction runs (minute rows live at most a day plus this, plus an hour of alignment). */
export const USAGE_COMPACT_MS = 15 * MINUTE;
/** Rows moved or deleted per statement: a few milliseconds of work each. */
export const COMPACT_BATCH = 5_000;
/** Pending (session, node, minute) entries kept while the database is away; beyond, additions are dropped and logged. */
const MAX_PENDING = 200_000;

/** The node name of the data plane inside this process (the catalogue's `local`). */
export const LOCAL_NODE = 'local';

export type UsageStore = Pick<ControlStore, 'addUsage' | 'rollupUsage' | 'pruneUsage'>;

export interface UsageHistoryOptions {
  /** Epoch milliseconds; default Date.now. */
  now?: () => number;
  flushMs?: number;
  /** How often compaction runs; 0: never by itself (tests call compact()). */
  compactMs?: number;
}

/** What the oldest rows of each step may be: the cut-offs compaction applies at `now`. */
export function usageCutoffs(now: number): { minute: number; hour: number; day: number } {
  return {
    // minute rows before this hour boundary are rolled into hours
    minute: Math.floor((now - USAGE_KEEP_MS.minute) / HOUR) * HOUR,
    // hour rows before this day boundary are rolled into days
    hour: Math.floor((now - USAGE_KEEP_MS.hour) / DAY) * DAY,
    // day rows before this are deleted
    day: Math.floor((now - USAGE_KEEP_MS.day) / DAY) * DAY,
  };
}

export class UsageHistory {
  readonly now: () => number;
  private readonly store: UsageStore;
  private readonly log: Logger;
  private pending = new Map<string, UsageAdd>();
  private flushing: Promise<void> | null = null;
  private compacting: Promise<void> | null = null;
  private dropped = 0;
  private stopped = false;
  private closing = false;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(store: UsageStore, log: Logger, opts: UsageHistoryOptions = {}) {
    this.store = store;
    this.log = log;
    this.now = opts.now ?? Date.now;
    const flush = setInterval(() => void this.flush(), opts.flushMs ?? USAGE_FLUSH_MS);
    flush.unref();
    this.timers.push(flush);
    const compactMs = opts.compactMs ?? USAGE_COMPACT_MS;
    if (compactMs > 0) {
      const first = setTimeout(() => void this.compact(), 1_000);
      const every = setInterval(() => void this.compact(), compactMs);
      first.unref();
      every.unref();
      this.timers.push(first, every);
    }
  }

  /** Bytes a session moved through a node just now (both may be 0; nothing is recorded then). */
  add(sessionId: string, node: string, up: number, down: number): void {
    if (this.stopped || (up <= 0 && down <= 0)) return;
    const start = Math.floor(this.now() / MINUTE) * MINUTE;
    const key = `${sessionId}\u0000${node}\u0000${start}`;
    const entry = this.pending.get(key);
    if (entry) {
      entry.uploaded_bytes += up;
      entry.downloaded_bytes += down;
      return;
    }
    if (this.pending.size >= MAX_PENDING) {
      if (this.dropped++ === 0) this.log.error({ pending: this.pending.size }, 'usage history: too much unwritten; dropping new additions until the database answers');
      return;
    }
    this.pending.set(key, { session_id: sessionId, node, start, uploaded_bytes: up, downloaded_bytes: down });
  }

  /** Additions not yet written (tests, diagnostics). */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Writes what is pending in one batch; a failure keeps it for the next try. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => (this.pending.size ? this.flush() : undefined));
    if (this.pending.size === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = (async () => {
      try {
        await this.store.addUsage([...batch.values()]);
        if (this.dropped) {
          this.log.warn({ dropped: this.dropped }, 'usage history: writing again');
          this.dropped = 0;
        }
      } catch (err) {
        this.log.warn({ err: String(err) }, 'usage history: writing failed; kept for the next try');
        for (const [key, entry] of batch) {
          const newer = this.pending.get(key);
          if (newer) {
            newer.uploaded_bytes += entry.uploaded_bytes;
            newer.downloaded_bytes += entry.downloaded_bytes;
          } else this.pending.set(key, entry);
        }
      }
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** Rolls up and prunes until nothing is left to do, in batches (one run at a time). */
  compact(batch = COMPACT_BATCH): Promise<void> {
    if (this.compacting) return this.compacting;
    this.compacting = (async () => {
      const cut = usageCutoffs(this.now());
      const steps: (() => Promise<number>)[] = [
        () => this.store.rollupUsage('minute', 'hour', cut.minute, batch),
        () => this.store.rollupUsage('hour', 'day', cut.hour, batch),
        () => this.store.pruneUsage('day', cut.day, batch),
      ];
      try {
        for (const run of steps) {
          while (!this.closing && (await run()) === batch) await new Promise<void>((r) => setImmediate(r));
        }
      } catch (err) {
        // the store closed under it (shutdown) or the database is away: the next run retries
        if (!this.closing) this.log.warn({ err: String(err) }, 'usage history: compaction failed; retried later');
      }
    })().finally(() => {
      this.compacting = null;
    });
    return this.compacting;
  }

  /** Stops the timers and writes what is pending (call after the data plane closed, before the store). */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.closing = true;
    await this.compacting;
    for (let i = 0; i < 3 && (this.pending.size > 0 || this.flushing); i++) await this.flush();
    this.stopped = true;
    if (this.pending.size) this.log.error({ entries: this.pending.size }, 'usage history could not be written at shutdown');
  }
}
