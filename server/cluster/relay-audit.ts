// What exits carried against what entries counted (cluster/geo.ts): a relayed connection is
// counted on its session by the entry only, so an entry that under-reports would use the exit as
// an unmetered proxy. Each exit's reports carry what its relay moved, by entry and session hash
// (node/relay-server.ts takeCarried); each entry node's applied reports give what it counted per
// session, hashed the same way (relay-grant.ts sessionTag). For every session of an entry, what
// exits carried can never be markedly more than what the entry counted on it (it counts every
// relayed byte, besides the session's direct traffic): the excess, summed over the entry's
// sessions (a made-up session hash counts nothing, so all it carried is excess), is shown as
// vad_relay_unreported_bytes{entry}, and when it passes SLACK a warning is logged (at most once a
// minute per entry).
//
// Limits, kept small on purpose: the comparison is in memory, per control-plane instance, from
// the moment the entry first reports to it (an exit and an entry connected to different
// instances are not compared); an entry's reports lag the exit's, so carried bytes are compared
// LAG_MS late; a session hash neither counted nor carried for IDLE_MS is forgotten; `serve`
// (whose data plane counts locally) is not compared; plain-HTTP answers are rewritten by the
// entry (hop-by-hop headers), so a few bytes per request differ either way: hence the slack.
import { Counter, Gauge, type Registry } from '../prom.ts';
import type { Logger } from '../domain.ts';
import { sessionTag } from '../dataplane/relay-grant.ts';

/** Carried bytes are compared with what the entry counted this much later. */
const LAG_MS = 10_000;
/** An entry's excess is reported past this many bytes plus this share of what was carried for it. */
const SLACK_BYTES = 4 * 1024 * 1024;
const SLACK_RATIO = 0.05;
const WARN_MS = 60_000;
/** An entry's sessions are compared at most this often (and on every scrape). */
const CHECK_MS = 5000;
const IDLE_MS = 10 * 60_000;
const MAX_ENTRIES = 10_000;
const MAX_TAGS = 200_000;

interface SessionBooks {
  /** Bytes the entry counted on the session since it first reported it here. */
  counted: number;
  /** Bytes exits carried for it since then. */
  carried: number;
  /** (time, carried) snapshots of the last LAG_MS and one before. */
  history: Array<{ at: number; carried: number }>;
  seen: number;
}

interface EntryBooks {
  sessions: Map<string, SessionBooks>;
  checkedAt: number;
  warnedAt: number;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

export class RelayAudit {
  private readonly books = new Map<string, EntryBooks>();
  private tags = 0;
  private sweptAt = 0;
  private readonly log: Logger;
  private readonly carriedTotal?: Counter<'entry'>;

  constructor(log: Logger, registry?: Registry) {
    this.log = log;
    // One audit per registry (a second channel on the same instance compares without metrics).
    if (!registry || registry.getSingleMetric('vad_relay_carried_bytes_total')) return;
    this.carriedTotal = new Counter({ name: 'vad_relay_carried_bytes_total', help: 'Bytes node relays carried for each entry (node id or serve), as the exits reported.', labelNames: ['entry'], registers: [registry] });
    const self = this;
    new Gauge({
      name: 'vad_relay_unreported_bytes',
      help: 'For each entry node: bytes exits carried for its sessions beyond what it counted on them (compared late; near 0 is expected).',
      labelNames: ['entry'],
      registers: [registry],
      collect() {
        this.reset();
        const now = Date.now();
        for (const [entry, e] of self.books) this.set({ entry }, excess(e, now).excess);
      },
    });
  }

  /** An entry node's applied report: the bytes it counted, per session id. */
  counted(entry: string, sessions: Iterable<[string, number]>, now = Date.now()): void {
    const e = this.entry(entry, now);
    if (!e) return;
    for (const [id, bytes] of sessions) {
      const s = this.session(e, sessionTag(id), now);
      if (s) s.counted += num(bytes);
    }
    this.sweep(now);
    this.check(entry, e, now);
  }

  /**
   * A node's report, applied or not: the node reports here, so what exits carry for it from now
   * on is compared (even when it never counts a byte); `relayed` is what its own relay carried
   * for other entries, as the node sent it (checked here), by entry and session hash.
   */
  carried(exit: string, relayed: unknown, now = Date.now()): void {
    this.entry(exit, now);
    if (!relayed || typeof relayed !== 'object') return;
    for (const [entry, sessions] of Object.entries(relayed).slice(0, 1000)) {
      if (!sessions || typeof sessions !== 'object') continue;
      const e = entry === exit ? undefined : this.books.get(entry); // compared once the entry reports here
      let total = 0;
      for (const [tag, v] of Object.entries(sessions as Record<string, unknown>).slice(0, 10_000)) {
        const t = v as { up?: unknown; down?: unknown } | null;
        const bytes = num(t?.up) + num(t?.down);
        if (!bytes || !/^[0-9a-f]{32}$/.test(tag)) continue;
        total += bytes;
        const s = e && this.session(e, tag, now);
        if (!s) continue;
        s.carried += bytes;
        s.history.push({ at: now, carried: s.carried });
      }
      if (total && entry.length <= 64) this.carriedTotal?.inc({ entry }, total);
      if (e) this.check(entry, e, now);
    }
  }

  private entry(id: string, now: number): EntryBooks | undefined {
    let e = this.books.get(id);
    if (!e && this.books.size < MAX_ENTRIES) this.books.set(id, (e = { sessions: new Map(), checkedAt: now, warnedAt: 0 }));
    return e;
  }

  private session(e: EntryBooks, tag: string, now: number): SessionBooks | undefined {
    let s = e.sessions.get(tag);
    if (!s) {
      if (this.tags >= MAX_TAGS) return undefined;
      this.tags++;
      e.sessions.set(tag, (s = { counted: 0, carried: 0, history: [], seen: now }));
    }
    s.seen = now;
    return s;
  }

  private check(entry: string, e: EntryBooks, now: number): void {
    if (now - e.checkedAt < CHECK_MS) return;
    e.checkedAt = now;
    const { excess: over, carried, sessions } = excess(e, now);
    if (over <= SLACK_BYTES + carried * SLACK_RATIO || now - e.warnedAt < WARN_MS) return;
    e.warnedAt = now;
    this.log.warn({ entry: entry.slice(0, 8), carried, unreported: over, sessions }, 'exit nodes carried markedly more for an entry node\'s sessions than it counted on them');
  }

  /** Forgets session hashes idle for IDLE_MS (at most once a minute). */
  private sweep(now: number): void {
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    for (const [entry, e] of this.books) {
      for (const [tag, s] of e.sessions) {
        if (now - s.seen < IDLE_MS) continue;
        e.sessions.delete(tag);
        this.tags--;
      }
      if (!e.sessions.size && now - e.checkedAt > IDLE_MS) this.books.delete(entry); // a node gone from here
    }
  }
}

/** Over an entry's sessions: what exits carried LAG_MS ago beyond what it counts now, and the carried total. */
function excess(e: EntryBooks, now: number): { excess: number; carried: number; sessions: number } {
  let over = 0;
  let carried = 0;
  let sessions = 0;
  for (const s of e.sessions.values()) {
    const c = lagged(s, now);
    if (c === undefined) continue;
    carried += c;
    if (c > s.counted) {
      over += c - s.counted;
      sessions++;
    }
  }
  return { excess: over, carried, sessions };
}

/** What exits had carried for the session LAG_MS ago (older snapshots are dropped). */
function lagged(s: SessionBooks, now: number): number | undefined {
  let found: number | undefined;
  while (s.history.length && s.history[0].at <= now - LAG_MS) {
    found = s.history[0].carried;
    if (s.history.length > 1 && s.history[1].at <= now - LAG_MS) s.history.shift();
    else break;
  }
  return found;
}
