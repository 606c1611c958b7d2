// In-memory runtime of sessions with open connections: meters, status, events and limits.
// Every inbound (VLESS over ws or tcp, the HTTP proxy) goes through admit() and then moves its
// bytes through the Lease it gets back, so all traffic is counted and limited the same way.
import type { DataPlaneDeps, LiveCounters } from './api.ts';
import type { LimitValues, SessionStatus } from '../domain.ts';
import { TokenBucket } from './token-bucket.ts';

export type Dir = 'up' | 'down';

/** What the runtime needs from a live connection: a way to cut it. */
export interface ConnHandle {
  close(reason: string): void;
}

interface Counters {
  up: number;
  down: number;
}

interface Buckets {
  up: TokenBucket;
  down: TokenBucket;
}

interface CustomerRt {
  id: string;
  totals: Counters;
  buckets: Buckets;
  global?: LimitValues;
  client?: LimitValues;
  session?: LimitValues;
  clients: Map<string, ClientRt>;
  sessions: Set<SessionRt>;
  limitsReadAt: number;
}

interface ClientRt {
  id: string;
  customer: CustomerRt;
  totals: Counters;
  buckets: Buckets;
  /** Sessions of this client with at least one open connection. */
  active: Set<SessionRt>;
}

interface SessionRt {
  id: string;
  short: string;
  reusable: boolean;
  customer: CustomerRt;
  client: ClientRt;
  status: SessionStatus;
  totals: Counters;
  buckets: Buckets;
  durationMs: number;
  openSince: number;
  connections: number;
  open: Set<ConnHandle>;
  /** Reached its own byte cap: ends when the last connection closes. */
  capped: boolean;
  lastSaved: { up: number; down: number; duration: number; status: SessionStatus; connections: number };
  lastStats: Counters;
  lastStatsAt: number;
  lastHeartbeatAt: number;
}

export type Refusal =
  | 'unknown'
  | 'ended'
  | 'paused'
  | 'not_reusable'
  | 'max_reconnections'
  | 'max_sessions'
  | 'session_cap'
  | 'client_cap'
  | 'global_cap';

export type AdmitResult = { ok: true; lease: Lease } | { ok: false; reason: Refusal };

const idShort = (id: string) => id.slice(0, 8);
const nowMs = () => performance.now();

function capOf(l: LimitValues | undefined, dir: Dir): number {
  const v = dir === 'up' ? l?.uploaded_bytes : l?.downloaded_bytes;
  return v === undefined || v === null ? Infinity : v;
}

function overCap(l: LimitValues | undefined, t: Counters): boolean {
  return t.up >= capOf(l, 'up') || t.down >= capOf(l, 'down');
}

function makeBuckets(l: LimitValues | undefined, now: number): Buckets {
  return { up: new TokenBucket(l?.upload_speed ?? undefined, now), down: new TokenBucket(l?.download_speed ?? undefined, now) };
}

function setRates(b: Buckets, l: LimitValues | undefined, now: number): void {
  b.up.setRate(l?.upload_speed ?? undefined, now);
  b.down.setRate(l?.download_speed ?? undefined, now);
}

/** One accepted connection's view of the runtime. */
export class Lease {
  readonly rt: SessionRt;
  private readonly runtime: Runtime;
  readonly conn: ConnHandle;
  private released = false;

  constructor(runtime: Runtime, rt: SessionRt, conn: ConnHandle) {
    this.runtime = runtime;
    this.rt = rt;
    this.conn = conn;
  }

  get closed(): boolean {
    return this.released;
  }

  /** Bytes of an n-byte chunk that the byte caps let through now (0 = a cap is reached). */
  grant(dir: Dir, n: number): number {
    if (this.released) return 0;
    const s = this.rt, c = s.client, k = s.customer;
    const t = dir === 'up' ? 'up' : 'down';
    const room = Math.min(
      capOf(k.session, dir) - s.totals[t],
      capOf(k.client, dir) - c.totals[t],
      capOf(k.global, dir) - k.totals[t],
    );
    return Math.max(0, Math.min(n, room));
  }

  /** Largest piece to reserve at once so that no single wait is long. */
  maxPiece(dir: Dir): number {
    const s = this.rt;
    return Math.min(s.buckets[dir].maxPiece(), s.client.buckets[dir].maxPiece(), s.customer.buckets[dir].maxPiece());
  }

  /** Whether any speed limit applies to this direction now (otherwise reserve() is a no-op). */
  shapes(dir: Dir): boolean {
    const s = this.rt;
    return s.buckets[dir].limited || s.client.buckets[dir].limited || s.customer.buckets[dir].limited;
  }

  /** Reserves n bytes from every bucket this connection draws from; returns ms to wait. */
  reserve(dir: Dir, n: number): number {
    const s = this.rt, now = nowMs();
    const a = s.buckets[dir].reserve(n, now);
    const b = s.client.buckets[dir].reserve(n, now);
    const c = s.customer.buckets[dir].reserve(n, now);
    return Math.max(a, b, c);
  }

  /** Changes whenever a rate of a bucket this direction draws from changes. */
  shapeEpoch(dir: Dir): number {
    const s = this.rt;
    return s.buckets[dir].epoch + s.client.buckets[dir].epoch + s.customer.buckets[dir].epoch;
  }

  /** Longest time, at the current rates, until every reservation made so far is paid (ms). */
  debtWait(dir: Dir): number {
    const s = this.rt, now = nowMs();
    return Math.max(s.buckets[dir].debtMs(now), s.client.buckets[dir].debtMs(now), s.customer.buckets[dir].debtMs(now));
  }

  /** Counts n payload bytes moved; cuts connections when a byte cap is reached. */
  account(dir: Dir, n: number): void {
    if (n <= 0) return;
    const s = this.rt, c = s.client, k = s.customer;
    s.totals[dir] += n;
    c.totals[dir] += n;
    k.totals[dir] += n;
    if (s.totals[dir] >= capOf(k.session, dir) || c.totals[dir] >= capOf(k.client, dir) || k.totals[dir] >= capOf(k.global, dir)) {
      this.runtime.enforceCaps(k);
    }
  }

  /** A chunk found no room under a byte cap: cut what is over. */
  capReached(): void {
    this.runtime.enforceCaps(this.rt.customer);
  }

  /** The connection is gone (idempotent). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.runtime.onConnectionClosed(this.rt, this.conn);
  }
}

export class Runtime {
  private readonly deps: DataPlaneDeps;
  private readonly customers = new Map<string, CustomerRt>();
  private readonly sessions = new Map<string, SessionRt>();
  private timer: NodeJS.Timeout | undefined;
  private lastFlush = 0;
  private closing = false;

  constructor(deps: DataPlaneDeps) {
    this.deps = deps;
  }

  start(): void {
    const c = this.deps.config;
    const tick = Math.max(10, Math.min(250, c.statsIntervalMs, c.heartbeatIntervalMs));
    this.timer = setInterval(() => this.tick(), tick);
    this.timer.unref();
  }

  private customer(id: string): CustomerRt {
    let k = this.customers.get(id);
    if (!k) {
      const sum = this.deps.store.sumCounters(id);
      const now = nowMs();
      k = {
        id,
        totals: { up: sum.uploaded_bytes, down: sum.downloaded_bytes },
        buckets: makeBuckets(undefined, now),
        clients: new Map(),
        sessions: new Set(),
        limitsReadAt: 0,
      };
      this.customers.set(id, k);
      this.readLimits(k);
    }
    return k;
  }

  private client(k: CustomerRt, id: string): ClientRt {
    let c = k.clients.get(id);
    if (!c) {
      const sum = this.deps.store.sumCounters(k.id, id);
      c = { id, customer: k, totals: { up: sum.uploaded_bytes, down: sum.downloaded_bytes }, buckets: makeBuckets(k.client, nowMs()), active: new Set() };
      k.clients.set(id, c);
    }
    return c;
  }

  private readLimits(k: CustomerRt): void {
    const s = this.deps.store;
    k.global = s.getLimits(k.id, 'global') ?? undefined;
    k.client = s.getLimits(k.id, 'client') ?? undefined;
    k.session = s.getLimits(k.id, 'session') ?? undefined;
    k.limitsReadAt = nowMs();
    const now = nowMs();
    setRates(k.buckets, k.global, now);
    for (const c of k.clients.values()) setRates(c.buckets, k.client, now);
    for (const s of k.sessions) setRates(s.buckets, k.session, now);
  }

  /** Decides whether a connection for `sessionId` may open; on success it is counted. */
  admit(sessionId: string, conn: ConnHandle): AdmitResult {
    if (this.closing) return { ok: false, reason: 'unknown' };
    const row = this.deps.store.getSession(sessionId);
    if (!row) return { ok: false, reason: 'unknown' };
    let s = this.sessions.get(sessionId);
    if (row.status === 'ended' || s?.status === 'ended' || s?.capped) return { ok: false, reason: 'ended' };
    if (row.paused) return { ok: false, reason: 'paused' };
    const k = this.customer(row.customer_id);
    const now = nowMs();
    if (now - k.limitsReadAt >= 1000) this.readLimits(k); // never admit on limits older than 1 s
    const c = this.client(k, row.client_id);
    if (!s) {
      s = {
        id: row.id,
        short: idShort(row.id),
        reusable: row.reusable,
        customer: k,
        client: c,
        status: row.status,
        totals: { up: row.uploaded_bytes, down: row.downloaded_bytes },
        buckets: makeBuckets(k.session, now),
        durationMs: row.duration * 1000,
        openSince: 0,
        connections: row.connections,
        open: new Set(),
        capped: false,
        lastSaved: { up: row.uploaded_bytes, down: row.downloaded_bytes, duration: row.duration, status: row.status, connections: row.connections },
        lastStats: { up: row.uploaded_bytes, down: row.downloaded_bytes },
        lastStatsAt: now,
        lastHeartbeatAt: now,
      };
    }
    const cl = k.client;
    if (!s.reusable && s.connections >= 1) return { ok: false, reason: 'not_reusable' };
    if (s.reusable && cl?.max_reconnections != null && s.connections >= 1 + cl.max_reconnections) return { ok: false, reason: 'max_reconnections' };
    if (s.open.size === 0 && cl?.max_sessions != null && c.active.size >= cl.max_sessions) return { ok: false, reason: 'max_sessions' };
    if (overCap(k.session, s.totals)) {
      this.sessions.set(s.id, s);
      k.sessions.add(s);
      s.capped = true;
      this.endSession(s);
      return { ok: false, reason: 'session_cap' };
    }
    if (overCap(k.client, c.totals)) return { ok: false, reason: 'client_cap' };
    if (overCap(k.global, k.totals)) return { ok: false, reason: 'global_cap' };

    this.sessions.set(s.id, s);
    k.sessions.add(s);
    s.connections++;
    s.open.add(conn);
    if (s.open.size === 1) {
      s.openSince = now;
      s.status = 'active';
      s.lastStatsAt = now;
      s.lastHeartbeatAt = now;
      c.active.add(s);
      this.save(s);
      this.publish(s, 'session_start');
    } else {
      this.save(s);
    }
    return { ok: true, lease: new Lease(this, s, conn) };
  }

  onConnectionClosed(s: SessionRt, conn: ConnHandle): void {
    if (!s.open.delete(conn)) return;
    const now = nowMs();
    if (s.open.size > 0) {
      this.save(s);
      return;
    }
    s.durationMs += now - s.openSince;
    s.openSince = 0;
    s.client.active.delete(s);
    if (s.capped || !s.reusable) s.status = 'ended';
    else s.status = 'idle';
    this.save(s);
    this.publish(s, 'session_stats');
    s.lastStats = { ...s.totals };
    this.publish(s, 'session_end');
    this.forget(s);
  }

  /** Ends a session with no open connection (cap found at admission). */
  private endSession(s: SessionRt): void {
    if (s.open.size > 0) {
      for (const c of [...s.open]) c.close('session_cap');
      return;
    }
    if (s.status === 'ended') return;
    s.status = 'ended';
    this.save(s);
    this.publish(s, 'session_stats');
    this.publish(s, 'session_end');
    this.forget(s);
  }

  private forget(s: SessionRt): void {
    if (s.open.size > 0) return;
    this.sessions.delete(s.id);
    s.customer.sessions.delete(s);
  }

  /** Closes what is over a cap: the session's own cap ends the session. */
  enforceCaps(k: CustomerRt): void {
    const globalOver = overCap(k.global, k.totals);
    for (const s of [...k.sessions]) {
      if (s.open.size === 0) continue;
      let reason: string | undefined;
      if (overCap(k.session, s.totals)) {
        s.capped = true;
        if (s.status !== 'ended') {
          this.deps.log.info({ session: s.short }, 'session byte cap reached; ending session');
        }
        reason = 'session_cap';
      } else if (overCap(k.client, s.client.totals)) reason = 'client_cap';
      else if (globalOver) reason = 'global_cap';
      if (reason) for (const c of [...s.open]) c.close(reason);
    }
  }

  live(id: string): LiveCounters | undefined {
    const s = this.sessions.get(id);
    if (!s) return undefined;
    return { status: s.status, uploaded_bytes: s.totals.up, downloaded_bytes: s.totals.down, duration: this.duration(s, nowMs()), open_connections: s.open.size };
  }

  pause(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    for (const c of [...s.open]) c.close('paused');
  }

  limitsChanged(customerId: string): void {
    const k = this.customers.get(customerId);
    if (!k) return;
    this.readLimits(k);
    this.enforceCaps(k);
  }

  private duration(s: SessionRt, now: number): number {
    return Math.floor((s.durationMs + (s.openSince ? now - s.openSince : 0)) / 1000);
  }

  private save(s: SessionRt): void {
    const d = this.duration(s, nowMs());
    const l = s.lastSaved;
    if (l.up === s.totals.up && l.down === s.totals.down && l.duration === d && l.status === s.status && l.connections === s.connections) return;
    try {
      this.deps.store.saveRuntime(s.id, { status: s.status, uploaded_bytes: s.totals.up, downloaded_bytes: s.totals.down, duration: d, connections: s.connections });
      s.lastSaved = { up: s.totals.up, down: s.totals.down, duration: d, status: s.status, connections: s.connections };
    } catch (err) {
      this.deps.log.error({ session: s.short, err: String(err) }, 'saving session runtime failed');
    }
  }

  private publish(s: SessionRt, type: 'session_start' | 'session_end' | 'session_stats' | 'session_heartbeat'): void {
    try {
      this.deps.events.publish({
        customerId: s.customer.id,
        sessionId: s.id,
        type,
        duration: this.duration(s, nowMs()),
        uploaded_bytes: s.totals.up,
        downloaded_bytes: s.totals.down,
      });
    } catch (err) {
      this.deps.log.error({ session: s.short, err: String(err) }, 'publishing event failed');
    }
  }

  private tick(): void {
    const now = nowMs();
    const cfg = this.deps.config;
    const flush = now - this.lastFlush >= 500;
    if (flush) this.lastFlush = now;
    for (const k of this.customers.values()) {
      if (k.sessions.size > 0 && now - k.limitsReadAt >= 1000) {
        // Safety net: limits are re-read every second even if nobody calls limitsChanged().
        this.readLimits(k);
        this.enforceCaps(k);
      }
    }
    for (const s of this.sessions.values()) {
      if (s.open.size === 0) continue;
      if (flush) this.save(s);
      if (now - s.lastStatsAt >= cfg.statsIntervalMs) {
        s.lastStatsAt = now;
        if (s.totals.up !== s.lastStats.up || s.totals.down !== s.lastStats.down) {
          s.lastStats = { ...s.totals };
          this.publish(s, 'session_stats');
        }
      }
      if (now - s.lastHeartbeatAt >= cfg.heartbeatIntervalMs) {
        s.lastHeartbeatAt = now;
        this.publish(s, 'session_heartbeat');
      }
    }
  }

  /** Closes every connection (their close paths flush and publish) and stops the timer. */
  shutdown(): void {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    for (const s of [...this.sessions.values()]) for (const c of [...s.open]) c.close('shutdown');
    for (const s of this.sessions.values()) this.save(s);
  }
}
