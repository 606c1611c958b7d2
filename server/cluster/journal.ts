// A data plane's journal: what it counted (bytes per session, the last runtime fields) and the
// events it published, kept in its data folder until the control plane's store has applied
// them. One implementation for the two data planes that report to a shared store: a node
// (reports over its channel, server/node/run.ts) and a `serve --database` instance's own data
// plane (reports into PostgreSQL, cluster/local-view.ts).
//
//   record()/event()  add to the PENDING part (not yet in a report), appended to the file by the
//                     end of the current event-loop turn (one write for everything recorded in it);
//   seal()            turns pending into a REPORT with the next sequence number (written whole);
//   ack(seq)          the store applied every report up to seq (exactly once: it keeps the last
//                     seq applied in the transaction that applies a report), so they are dropped.
//
// The file is JSON lines: {"h":{id,next}} first, then {"d":[session,up,down,status,duration,
// connections]}, {"e":event}, {"r":report} (a seal: the report's sessions and its first events
// leave pending) and {"a":seq}. It is rewritten (temporary file, fsync, rename) when it grows
// past COMPACT_BYTES and at every open, so a torn last line (power loss) never glues to the next.
//
// What a crash can cost: kill -9 loses nothing written (the page cache outlives the process),
// so only what the data plane had not yet handed over (it saves a session at least every 500 ms
// and whenever SAVE_BYTES (512 KiB) more moved, dataplane/reporter.ts) and what was handed over
// but not yet written (written at the end of the event-loop turn, or at once past WRITE_NOW_BYTES,
// 256 KiB): under 768 KiB per session. Power loss can also cost what was written in
// the last SYNC_MS, as the file is fdatasync'ed once a second when written to.
import { randomUUID } from 'node:crypto';
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import type { Logger } from '../domain.ts';
import { type Delta, type JournalEvent, type JournalState, type Line, type Report, MAX_PENDING_EVENTS, mergeInto, readJournal, replaceFile, trackConnected } from './journal-file.ts';

export type { Delta, JournalEvent, Report } from './journal-file.ts';

/**
 * Records holding this many bytes since the last write are written at once, not at the end of
 * the event-loop turn: a turn can read many chunks before it ends, and the bound must not grow with it.
 */
const WRITE_NOW_BYTES = 256 * 1024;
/** The file is rewritten once appends made it this large. */
const COMPACT_BYTES = 2 * 1024 * 1024;
/** How often written lines are made durable against power loss. */
const SYNC_MS = 1000;
/** A report's size bounds: a node's channel frame stays well under its limit. */
export const REPORT_MAX_EVENTS = 2000;
export const REPORT_MAX_SESSIONS = 4000;

export class CounterJournal {
  /** Names this journal to the store, which keeps the last seq it applied of it. */
  readonly id: string;
  /** Recorded, not yet in a report. */
  readonly pending = new Map<string, Delta>();
  pendingEvents: JournalEvent[] = [];
  /** Sealed reports not yet acknowledged, oldest first. */
  reports: Report[] = [];
  /** Sessions the previous process had connections of when it stopped (read at open; crash repair). */
  readonly carriedBefore: string[];
  private nextSeq: number;
  private fd: number;
  private readonly file: string;
  private readonly log: Logger;
  private buf = '';
  private flushScheduled = false;
  /** Bytes the records in `buf` carry. */
  private bufferedBytes = 0;
  private size = 0;
  private unsynced = false;
  private readonly syncTimer: NodeJS.Timeout;
  private closed = false;
  /** Sessions last recorded with open connections (kept in the file across compactions: crash repair). */
  private readonly connected = new Set<string>();

  private constructor(file: string, log: Logger, state: JournalState) {
    this.file = file;
    this.log = log;
    this.id = state.id;
    this.nextSeq = state.next;
    this.reports = state.reports;
    for (const [id, d] of state.pending) this.pending.set(id, d);
    this.pendingEvents = state.events;
    this.carriedBefore = state.carried;
    // Kept listed (and in the file) until forgetCarried(): a process that dies before its repair leaves them to the next.
    for (const id of state.carried) this.connected.add(id);
    this.fd = this.rewrite();
    this.syncTimer = setInterval(() => this.sync(), SYNC_MS);
    this.syncTimer.unref();
  }

  /**
   * Opens the journal at `file`, taking over what a previous process left (a new one when there
   * is none). What was recorded as connected then is connected no longer: the recovered entries
   * keep their bytes but lose `status: 'active'` and their connection count, and the sessions
   * are listed in carriedBefore for the caller's repair.
   */
  static open(file: string, log: Logger): CounterJournal {
    const state = readJournal(file, log);
    if (!state.id) state.id = randomUUID();
    return new CounterJournal(file, log, state);
  }

  /** Adds what a session moved (and its runtime fields) to pending. */
  record(id: string, d: Delta): void {
    if (this.closed) return;
    mergeInto(this.pending, id, d);
    trackConnected(this.connected, id, d);
    this.append({ d: [id, d.up, d.down, d.status ?? null, d.duration ?? null, d.connections ?? null] });
    this.bufferedBytes += d.up + d.down;
    if (this.bufferedBytes >= WRITE_NOW_BYTES) this.flush();
  }

  event(e: JournalEvent): void {
    if (this.closed) return;
    this.pendingEvents.push(e);
    if (this.pendingEvents.length > MAX_PENDING_EVENTS) this.pendingEvents.shift();
    this.append({ e });
  }

  /** These sessions of carriedBefore were repaired: they are no longer listed as connected. */
  forgetCarried(ids: string[]): void {
    for (const id of ids) this.connected.delete(id);
    this.append({ c: [...this.connected] });
  }

  /** Bytes of a session counted here that the store has not applied yet (pending and sealed). */
  unapplied(id: string): { up: number; down: number } | undefined {
    let up = 0, down = 0, found = false;
    for (const d of [this.pending.get(id), ...this.reports.map((r) => r.counters[id])]) {
      if (!d) continue;
      found = true;
      up += d.up;
      down += d.down;
    }
    return found ? { up, down } : undefined;
  }

  /** Whether anything is recorded that no report carries yet. */
  get hasPending(): boolean {
    return this.pending.size > 0 || this.pendingEvents.length > 0;
  }

  /** Seals pending (up to the report bounds) into the next report; null when nothing is pending. */
  seal(): Report | null {
    if (this.closed || !this.hasPending) return null;
    const counters: Record<string, Delta> = {};
    let n = 0;
    for (const [id, d] of this.pending) {
      if (n++ >= REPORT_MAX_SESSIONS) break;
      counters[id] = d;
    }
    for (const id of Object.keys(counters)) this.pending.delete(id);
    const events = this.pendingEvents.splice(0, REPORT_MAX_EVENTS);
    const report: Report = { seq: this.nextSeq++, counters, events };
    this.reports.push(report);
    this.append({ r: report });
    return report;
  }

  /** The store applied every report up to seq: they are dropped; returns them. */
  ack(seq: number): Report[] {
    const done = this.reports.filter((r) => r.seq <= seq);
    if (done.length === 0) return done;
    this.reports = this.reports.filter((r) => r.seq > seq);
    this.append({ a: seq });
    return done;
  }

  /** The last seq the store holds for this journal is past ours (the folder was lost): number after it. */
  renumberAfter(seq: number): void {
    if (seq < this.nextSeq) return;
    let next = seq;
    for (const r of this.reports) r.seq = ++next;
    this.nextSeq = next + 1;
    this.fd = this.rewrite(this.fd);
  }

  /** Takes over reports an older version kept elsewhere, with their seqs as they were. */
  adopt(reports: Report[]): void {
    const have = new Set(this.reports.map((r) => r.seq));
    let added = 0;
    for (const r of reports) {
      if (!r || !Number.isSafeInteger(r.seq) || r.seq < 1 || have.has(r.seq)) continue;
      this.reports.push({ seq: r.seq, counters: r.counters ?? {}, events: r.events ?? [] });
      this.nextSeq = Math.max(this.nextSeq, r.seq + 1);
      added++;
    }
    if (!added) return;
    this.reports.sort((a, b) => a.seq - b.seq);
    this.fd = this.rewrite(this.fd);
  }

  get lastSeq(): number {
    return this.nextSeq - 1;
  }

  /** Writes what was appended in this turn (also run at the end of each turn that appended). */
  flush(): void {
    this.flushScheduled = false;
    this.bufferedBytes = 0;
    if (!this.buf || this.closed) return;
    const text = this.buf;
    this.buf = '';
    try {
      writeSync(this.fd, text);
      this.size += Buffer.byteLength(text);
      this.unsynced = true;
      if (this.size > COMPACT_BYTES) this.fd = this.rewrite(this.fd);
    } catch (err) {
      this.log.error({ err: String(err) }, 'writing the counter journal failed; what it holds is kept in memory');
    }
  }

  /** Makes what was written durable (power loss); once a second when written to. */
  sync(): void {
    if (!this.unsynced || this.closed) return;
    this.unsynced = false;
    try {
      fdatasyncSync(this.fd);
    } catch (err) {
      this.log.warn({ err: String(err) }, 'syncing the counter journal failed');
    }
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.sync();
    clearInterval(this.syncTimer);
    this.closed = true;
    closeSync(this.fd);
  }

  private append(line: Line): void {
    this.buf += JSON.stringify(line) + '\n';
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes the whole state to a new file that replaces the old; returns its descriptor for appends. */
  private rewrite(oldFd?: number): number {
    this.buf = ''; // what it held is in the state written here
    this.bufferedBytes = 0;
    const lines: Line[] = [{ h: { id: this.id, next: this.nextSeq } }, { c: [...this.connected] }, ...this.reports.map((r) => ({ r }))];
    const pendingLines = [...this.pending].map(([id, d]): Line => ({ d: [id, d.up, d.down, d.status ?? null, d.duration ?? null, d.connections ?? null] }));
    // Pending is written before the reports would take it again at replay: reports first, then pending.
    const text = [...lines, ...pendingLines, ...this.pendingEvents.map((e) => ({ e }))].map((l) => JSON.stringify(l) + '\n').join('');
    replaceFile(this.file, text);
    if (oldFd !== undefined) closeSync(oldFd);
    this.size = Buffer.byteLength(text);
    this.unsynced = false;
    return openSync(this.file, 'a', 0o600);
  }
}
