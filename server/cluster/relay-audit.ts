// What exits carried against what entries counted (cluster/geo.ts): a relayed connection is
// counted on its session by the entry only, so an entry that under-reports would use the exit as
// an unmetered proxy. Each exit's reports carry what its relay moved, by entry and session hash
// (node/relay-server.ts takeCarried); each entry node's applied reports give what it counted on
// all its sessions. For an entry node, what exits carried for it can never be markedly more than
// what it counted (it counts every relayed byte, besides its direct traffic): when it is, a
// warning is logged (at most once a minute per entry) and vad_relay_unreported_bytes{entry}
// shows the excess.
//
// Limits, kept small on purpose: the comparison is in memory, per control-plane instance, from
// the moment the entry first reports to it (an exit and an entry connected to different
// instances are not compared); an entry's reports lag the exit's, so carried bytes are compared
// LAG_MS late and with SLACK; `serve` (whose data plane counts locally) is not compared; the
// session hashes are summed per entry, not matched to the entry's sessions.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from '../domain.ts';

/** Carried bytes are compared with what the entry counted this much later. */
const LAG_MS = 10_000;
/** Carried may exceed counted by this much and this ratio before it is reported. */
const SLACK_BYTES = 4 * 1024 * 1024;
const SLACK_RATIO = 1.1;
const WARN_MS = 60_000;
const MAX_ENTRIES = 10_000;

interface EntryBooks {
  /** Bytes the entry counted on its sessions since it first reported here. */
  counted: number;
  /** Bytes exits carried for it since then. */
  carried: number;
  /** (time, carried) snapshots of the last LAG_MS and one before. */
  history: Array<{ at: number; carried: number }>;
  warnedAt: number;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

export class RelayAudit {
  private readonly books = new Map<string, EntryBooks>();
  private readonly log: Logger;
  private readonly carriedTotal?: Counter<'entry'>;

  constructor(log: Logger, registry?: Registry) {
    this.log = log;
    // One audit per registry (a second channel on the same instance compares without metrics).
    if (!registry || registry.getSingleMetric('vad_relay_carried_bytes_total')) return;
    this.carriedTotal = new Counter({ name: 'vad_relay_carried_bytes_total', help: 'Bytes node relays carried for each entry (node id or serve), as the exits reported.', labelNames: ['entry'], registers: [registry] });
    const books = this.books;
    new Gauge({
      name: 'vad_relay_unreported_bytes',
      help: 'For each entry node: bytes exits carried for it beyond what it counted on its sessions (compared late and with slack; 0 is expected).',
      labelNames: ['entry'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [entry, b] of books) this.set({ entry }, Math.max(0, (lagged(b, Date.now()) ?? 0) - b.counted));
      },
    });
  }

  /** An entry node's applied report: the bytes it counted on its sessions. */
  counted(entry: string, bytes: number): void {
    let b = this.books.get(entry);
    if (!b) {
      if (this.books.size >= MAX_ENTRIES) return;
      this.books.set(entry, (b = { counted: 0, carried: 0, history: [], warnedAt: 0 }));
    }
    b.counted += num(bytes);
    this.check(entry, b);
  }

  /** An exit's report: `relayed` as the node sent it (checked here), by entry and session hash. */
  carried(exit: string, relayed: unknown, now = Date.now()): void {
    if (!relayed || typeof relayed !== 'object') return;
    for (const [entry, sessions] of Object.entries(relayed).slice(0, 1000)) {
      if (!sessions || typeof sessions !== 'object') continue;
      let bytes = 0;
      for (const v of Object.values(sessions as Record<string, unknown>).slice(0, 10_000)) {
        const t = v as { up?: unknown; down?: unknown } | null;
        bytes += num(t?.up) + num(t?.down);
      }
      if (!bytes) continue;
      if (entry.length <= 64) this.carriedTotal?.inc({ entry }, bytes);
      const b = this.books.get(entry);
      if (!b || entry === exit) continue; // compared only once the entry reports here
      b.carried += bytes;
      b.history.push({ at: now, carried: b.carried });
      this.check(entry, b, now);
    }
  }

  private check(entry: string, b: EntryBooks, now = Date.now()): void {
    const carried = lagged(b, now);
    if (carried === undefined || carried <= b.counted * SLACK_RATIO + SLACK_BYTES) return;
    if (now - b.warnedAt < WARN_MS) return;
    b.warnedAt = now;
    this.log.warn({ entry: entry.slice(0, 8), carried, counted: b.counted }, 'exit nodes carried markedly more for an entry node than it counted on its sessions');
  }
}

/** What exits had carried for the entry LAG_MS ago (older snapshots are dropped). */
function lagged(b: EntryBooks, now: number): number | undefined {
  let found: number | undefined;
  while (b.history.length && b.history[0].at <= now - LAG_MS) {
    found = b.history[0].carried;
    if (b.history.length > 1 && b.history[1].at <= now - LAG_MS) b.history.shift();
    else break;
  }
  return found;
}
