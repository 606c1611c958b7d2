// The counter journal's file (journal.ts): its JSON lines, their replay when a journal is
// opened (what a previous process left, a torn last line skipped), and the atomic rewrite
// (temporary file, fsync, rename, directory fsync) that compacts it.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EventInput, Logger, SessionStatus } from '../domain.ts';

/** Bytes moved since the previous record, and the runtime fields last seen. */
export interface Delta {
  up: number;
  down: number;
  status?: SessionStatus;
  duration?: number;
  connections?: number;
}

/** An event as journalled: when it happened (ISO time) with it. */
export type JournalEvent = EventInput & { at?: string };

export interface Report {
  seq: number;
  counters: Record<string, Delta>;
  events: JournalEvent[];
}

/** Events kept pending (while no report can be sealed: offline); the oldest go first beyond it. */
export const MAX_PENDING_EVENTS = 10_000;

export type Line = { h?: { id: string; next: number }; c?: string[]; d?: [string, number, number, SessionStatus | null, number | null, number | null]; e?: JournalEvent; r?: Report; a?: number };

/** A journal's state as read from its file: id ('' when new), next seq, reports, pending, the sessions carried connected. */
export interface JournalState {
  id: string;
  next: number;
  reports: Report[];
  pending: Map<string, Delta>;
  events: JournalEvent[];
  carried: string[];
}

/** Keeps the set of sessions last recorded with open connections up to date with a record. */
export function trackConnected(connected: Set<string>, id: string, d: Delta): void {
  if (d.status === 'active' || (d.connections ?? 0) > 0) connected.add(id);
  else if (d.status !== undefined || d.connections === 0) connected.delete(id);
}

export function mergeInto(map: Map<string, Delta>, id: string, d: Delta): void {
  let p = map.get(id);
  if (!p) map.set(id, (p = { up: 0, down: 0 }));
  p.up += d.up;
  p.down += d.down;
  if (d.status !== undefined) p.status = d.status;
  if (d.duration !== undefined) p.duration = d.duration;
  if (d.connections !== undefined) p.connections = d.connections;
}

/** Replays one line of the file into the state (`connected`: the sessions last recorded with connections). */
function replay(state: JournalState, connected: Set<string>, line: Line): void {
  if (line.h) {
    state.id = String(line.h.id);
    state.next = Math.max(state.next, Number(line.h.next) || 1);
  } else if (line.c) {
    connected.clear();
    for (const id of line.c) connected.add(id);
  } else if (line.d) {
    const [id, up, down, status, duration, connections] = line.d;
    const d: Delta = { up, down, ...(status ? { status } : {}), ...(duration !== null ? { duration } : {}), ...(connections !== null ? { connections } : {}) };
    mergeInto(state.pending, id, d);
    trackConnected(connected, id, d);
  } else if (line.e) {
    state.events.push(line.e);
    if (state.events.length > MAX_PENDING_EVENTS) state.events.shift();
  } else if (line.r) {
    state.reports.push(line.r);
    for (const id of Object.keys(line.r.counters)) state.pending.delete(id);
    state.events.splice(0, line.r.events.length);
    state.next = Math.max(state.next, line.r.seq + 1);
  } else if (typeof line.a === 'number') {
    const acked = line.a;
    state.reports = state.reports.filter((r) => r.seq > acked);
  }
}

/**
 * What a previous process left at `file` (an empty state when there is none). What was recorded
 * as connected then is connected no longer: the entries keep their bytes but lose
 * `status: 'active'` and their connection count, and the sessions are listed in `carried`.
 */
export function readJournal(file: string, log: Logger): JournalState {
  let text = '';
  mkdirSync(dirname(file), { recursive: true });
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const state: JournalState = { id: '', next: 1, reports: [], pending: new Map(), events: [], carried: [] };
  const connected = new Set<string>();
  let torn = 0;
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    let line: Line;
    try {
      line = JSON.parse(raw) as Line;
    } catch {
      torn++;
      continue;
    }
    replay(state, connected, line);
  }
  if (torn) log.warn({ lines: torn }, 'the counter journal had unreadable lines (a write cut short); they were skipped');
  const settle = (d: Delta) => {
    if (d.status === 'active') delete d.status;
    delete d.connections;
  };
  for (const r of state.reports) for (const d of Object.values(r.counters)) settle(d);
  for (const d of state.pending.values()) settle(d);
  state.carried = [...connected];
  return state;
}

/** Replaces the file with `text`, atomically and durably. */
export function replaceFile(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  try {
    const dir = openSync(dirname(file), 'r');
    fsyncSync(dir);
    closeSync(dir);
  } catch {
    // a directory that cannot be synced: the rename is still atomic against kill -9
  }
}
