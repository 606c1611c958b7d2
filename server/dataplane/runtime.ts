// The runtime of sessions with open connections: it holds the meters (meters.ts) of every
// customer, client and session in memory, admits connections (admission.ts), hands each a
// Lease (lease.ts), cuts what is over a limit (enforcement.ts) and reports counters and
// events (reporter.ts). Every inbound (VLESS over ws or tcp, the HTTP proxy) goes through
// admit() and then moves its bytes through its Lease, so all traffic is counted and limited
// the same way.
import type { DataPlaneDeps, LiveCounters } from './api.ts';
import { type CapReason, type CloseReason, isCapReason } from './close-reason.ts';
import { isPeriodic, periodOf } from '../contract/period.ts';
import type { LimitScope } from '../domain.ts';
import { wallClock } from '../time.ts';
import { type Refusal, isFloodRefusal, refusalByLimits, refusalOfSession } from './admission.ts';
import { cutOverCaps, cutSession } from './enforcement.ts';
import { Lease, type LeaseOwner } from './lease.ts';
import {
  type Buckets,
  type CapCounting,
  type Counters,
  type ClientState,
  type ConnHandle,
  type CustomerState,
  type ClusterShare,
  type SessionState,
  NO_SHARE,
  durationOf,
  grantSpent,
  idShort,
  inUse,
  makeBuckets,
  nowMs,
  setRates,
} from './meters.ts';
import { Reporter, startTicker } from './reporter.ts';

export type AdmitResult = { ok: true; lease: Lease } | { ok: false; reason: Refusal };

/** Limits are never older than this when a connection is admitted or a tick runs. */
const LIMITS_MAX_AGE_MS = 1000;
/** Open connections per session unless configured (a browser opens a few dozen at most). */
export const DEFAULT_MAX_CONNECTIONS_PER_SESSION = 64;
/** New connections per session per second, and the burst above it. */
export const DEFAULT_CONNECTION_RATE = 50;
export const DEFAULT_CONNECTION_BURST = 100;
/** How long a session whose last connection closed stays active, waiting for a reconnection. */
export const DEFAULT_RECONNECT_GRACE_MS = 2000;
/** At most one log line per session per this interval for refusals by the connection rate. */
const RATE_LOG_INTERVAL_MS = 10_000;

/** What a periodic cap has counted for an entity: its totals since its period's base. */
const sinceBase = (e: CapCounting & { totals: Counters }): Counters => ({ up: e.totals.up - e.capBase.up, down: e.totals.down - e.capBase.down });
/** The period key under which a rolling window's base is recorded (one base, rewritten: server/quota/job.ts). */
const ROLLING_KEY = 0;

export class Runtime implements LeaseOwner {
  private readonly deps: DataPlaneDeps;
  private readonly reporter: Reporter;
  private readonly customers = new Map<string, CustomerState>();
  private readonly sessions = new Map<string, SessionState>();
  /** When a session's cap or expiry was last told to the observer (notifyCapped). */
  private readonly cappedNotified = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private closing = false;
  /** When a session's connection-rate refusals were last logged. */
  private readonly rateLogged = new Map<string, number>();
  /** Cluster nodes: the last share told of each customer (key its id) and client (`customer\0client`). */
  private readonly shares = new Map<string, { left: Counters; final: { up: boolean; down: boolean }; rateShare: number }>();

  constructor(deps: DataPlaneDeps) {
    this.deps = deps;
    this.reporter = new Reporter(deps);
  }

  start(): void {
    this.timer = startTicker(this.deps.config, () => this.tick());
  }

  private customer(id: string): CustomerState {
    let customer = this.customers.get(id);
    if (!customer) {
      const sum = this.deps.store.sumCounters(id);
      customer = {
        id,
        totals: { up: sum.uploaded_bytes, down: sum.downloaded_bytes },
        buckets: makeBuckets(undefined, nowMs()),
        limits: {},
        clients: new Map(),
        sessions: new Set(),
        limitsReadAt: 0,
        capBase: { up: 0, down: 0 },
        capPeriod: -1,
        ...NO_SHARE(),
      };
      this.applyShare(customer, this.shares.get(id), new Set());
      this.customers.set(id, customer);
      this.readLimits(customer);
    }
    return customer;
  }

  private client(customer: CustomerState, id: string): ClientState {
    let client = customer.clients.get(id);
    if (!client) {
      const sum = this.deps.store.sumCounters(customer.id, id);
      client = { id, customer, totals: { up: sum.uploaded_bytes, down: sum.downloaded_bytes }, buckets: makeBuckets(undefined, nowMs()), active: new Set(), capBase: { up: 0, down: 0 }, capPeriod: -1, ...NO_SHARE() };
      this.applyShare(client, this.shares.get(`${customer.id}\u0000${id}`), new Set());
      setRates(client.buckets, customer.limits.client, nowMs(), client.rateShare);
      customer.clients.set(id, client);
      this.countFrom(customer, 'client', client, wallClock());
    }
    return client;
  }

  private readLimits(customer: CustomerState): void {
    const store = this.deps.store;
    customer.limits = {
      global: store.getLimits(customer.id, 'global') ?? undefined,
      client: store.getLimits(customer.id, 'client') ?? undefined,
      session: store.getLimits(customer.id, 'session') ?? undefined,
    };
    customer.limitsReadAt = nowMs();
    const wall = wallClock();
    this.countFrom(customer, 'global', customer, wall);
    for (const client of customer.clients.values()) this.countFrom(customer, 'client', client, wall);
    for (const session of customer.sessions) this.countFrom(customer, 'session', session, wall);
    const now = nowMs();
    setRates(customer.buckets, customer.limits.global, now, customer.rateShare);
    for (const client of customer.clients.values()) setRates(client.buckets, customer.limits.client, now, client.rateShare);
    for (const session of customer.sessions) setRates(session.buckets, customer.limits.session, now);
  }

  /**
   * Where an entity's caps count from (periodic caps): lifetime caps from zero; a
   * periodic cap from the entity's totals at the start of the current period, as the control
   * plane recorded them, or else, when the runtime first sees the entity in this period (or sees
   * the period turn while it is in memory), from its totals now. A rolling window's base moves
   * with the usage history, so it is read again each time.
   */
  private countFrom(customer: CustomerState, scope: LimitScope, entity: CapCounting & { id: string; totals: Counters }, wall: number): void {
    const period = periodOf(customer.limits[scope], wall);
    if (!period || !isPeriodic(customer.limits[scope])) {
      entity.capPeriod = -1;
      entity.capBase = { up: 0, down: 0 };
      return;
    }
    if (entity.capPeriod === period.start && period.kind !== 'rolling_30d') return;
    const entityId = scope === 'global' ? customer.id : entity.id;
    const recorded = this.deps.store.quotaBase?.(customer.id, scope, entityId, period.kind === 'rolling_30d' ? ROLLING_KEY : period.start);
    entity.capBase = recorded ? { up: Math.min(recorded.up, entity.totals.up), down: Math.min(recorded.down, entity.totals.down) } : { ...entity.totals };
    entity.capPeriod = period.start;
  }

  /**
   * Decides whether a connection for `sessionId` may open; on success it holds the session's
   * place and is counted once its lease is committed (the destination reached). Never
   * throws: it runs inside socket handlers, so a store error (disk gone, database locked) is a
   * refusal ('unavailable') and a log line, not an uncaught exception.
   */
  admit(sessionId: string, conn: ConnHandle): AdmitResult {
    let result: AdmitResult;
    try {
      result = this.tryAdmit(sessionId, conn);
    } catch (err) {
      this.deps.log.error({ session: idShort(sessionId), err: String(err) }, 'admission failed: store unavailable');
      result = { ok: false, reason: 'unavailable' };
    }
    if (!result.ok) this.deps.observe?.refused(result.reason);
    return result;
  }

  /** Connections relaying now, per zone (metrics). */
  openByZone(): Array<{ zone: string; count: number }> {
    const byZone = new Map<string, number>();
    for (const s of this.sessions.values()) if (s.open.size) byZone.set(s.zone, (byZone.get(s.zone) ?? 0) + s.open.size);
    return [...byZone].map(([zone, count]) => ({ zone, count }));
  }

  private tryAdmit(sessionId: string, conn: ConnHandle): AdmitResult {
    let session = this.sessions.get(sessionId);
    // The connection rate first, before any store read: a churning session is refused cheaply.
    if (session && !this.takeConnToken(session)) return { ok: false, reason: 'connection_rate' };
    const row = this.closing ? undefined : this.deps.store.getSession(sessionId);
    const early = refusalOfSession({ closing: this.closing, row, live: session });
    if (early || !row) return { ok: false, reason: early ?? 'unknown' };
    const customer = this.customer(row.customer_id);
    const now = nowMs();
    if (now - customer.limitsReadAt >= LIMITS_MAX_AGE_MS) this.readLimits(customer);
    const client = this.client(customer, row.client_id);
    if (!session) {
      session = {
        id: row.id,
        short: idShort(row.id),
        zone: row.zone,
        expiresAt: 0,
        reusable: row.reusable,
        customer,
        client,
        status: row.status,
        totals: { up: row.uploaded_bytes, down: row.downloaded_bytes },
        buckets: makeBuckets(customer.limits.session, now),
        durationMs: row.duration * 1000,
        openSince: 0,
        connections: row.connections,
        open: new Set(),
        pending: new Set(),
        capped: false,
        lingerUntil: 0,
        lastClosedAt: 0,
        connTokens: this.connBurst - 1, // this connection takes one
        connTokensAt: now,
        lastSaved: { up: row.uploaded_bytes, down: row.downloaded_bytes, duration: row.duration, status: row.status, connections: row.connections },
        lastStats: { up: row.uploaded_bytes, down: row.downloaded_bytes },
        lastStatsAt: now,
        lastHeartbeatAt: now,
        capBase: { up: 0, down: 0 },
        capPeriod: -1,
      };
      this.countFrom(customer, 'session', session, wallClock());
    }
    // The row is read at every admission: its expires_at holds from now (ticks end it on time).
    session.expiresAt = row.expires_at ? Date.parse(row.expires_at) || 0 : 0;
    if (session.expiresAt && wallClock() >= session.expiresAt) {
      this.sessions.set(session.id, session);
      customer.sessions.add(session);
      session.capped = true;
      if (session.status === 'active') this.notifyCapped(session, 'expired');
      this.endSession(session, 'expired');
      return { ok: false, reason: 'expired' };
    }
    // A cluster node: the control plane's answer to this session's claim (central max_sessions).
    const decided = session.open.size === 0 && session.pending.size === 0 ? this.deps.store.clusterRefusal?.(sessionId) : undefined;
    const refusal = decided ?? refusalByLimits({
      reusable: session.reusable,
      // a connection still dialling holds its place: it may yet be counted
      connections: session.connections + session.pending.size,
      openConnections: session.open.size + session.pending.size,
      activeSessionsOfClient: client.active.size,
      maxOpenConnections: this.deps.config.maxConnectionsPerSession ?? DEFAULT_MAX_CONNECTIONS_PER_SESSION,
      limits: customer.limits,
      totals: {
        session: sinceBase(session),
        client: sinceBase(client),
        customer: sinceBase(customer),
      },
      spent: { client: grantSpent(client), customer: grantSpent(customer) },
    });
    // A lifetime session cap ends the session; a periodic one refuses until the period turns.
    if (refusal === 'session_cap' && session.capPeriod < 0) {
      // Over its own cap: the session ends now, not only this connection.
      this.sessions.set(session.id, session);
      customer.sessions.add(session);
      session.capped = true;
      this.endSession(session);
    }
    if (refusal && isFloodRefusal(refusal)) this.logFlood(session, refusal);
    if (refusal) return { ok: false, reason: refusal };

    this.sessions.set(session.id, session);
    customer.sessions.add(session);
    session.pending.add(conn);
    client.active.add(session);
    return { ok: true, lease: new Lease(this, session, conn) };
  }

  private get connBurst(): number {
    return this.deps.config.connectionBurst ?? DEFAULT_CONNECTION_BURST;
  }

  /** Takes one token of the session's connection-rate bucket; false when it is empty. */
  private takeConnToken(session: SessionState): boolean {
    const now = nowMs();
    const rate = this.deps.config.connectionRatePerSecond ?? DEFAULT_CONNECTION_RATE;
    session.connTokens = Math.min(this.connBurst, session.connTokens + ((now - session.connTokensAt) * rate) / 1000);
    session.connTokensAt = now;
    if (session.connTokens >= 1) {
      session.connTokens -= 1;
      return true;
    }
    this.logFlood(session, 'connection_rate');
    return false;
  }

  /** Logs a flood refusal (isFloodRefusal) at most once per session per RATE_LOG_INTERVAL_MS. */
  private logFlood(session: SessionState, reason: Refusal): void {
    const now = nowMs();
    const logged = this.rateLogged.get(session.id);
    if (logged !== undefined && now - logged < RATE_LOG_INTERVAL_MS) return;
    this.rateLogged.set(session.id, now);
    const what = reason === 'connection_rate' ? 'over the session\'s connection rate' : 'over the session\'s open-connection cap';
    this.deps.log.warn({ session: session.short, reason }, `new connections ${what} are refused`);
  }

  /** The connection reached its destination: counted now; the first one starts the session,
   *  unless the session is still active from a connection closed within the grace. */
  connectionOpened(session: SessionState, conn: ConnHandle): void {
    if (!session.pending.delete(conn)) return;
    const now = nowMs();
    session.connections++;
    session.open.add(conn);
    session.client.active.add(session);
    if (session.open.size === 1 && session.lingerUntil) {
      // A reconnection within the grace: the session never stopped, the gap counts as active.
      session.durationMs += now - session.lastClosedAt;
      session.openSince = now;
      session.lingerUntil = 0;
    } else if (session.open.size === 1) {
      session.openSince = now;
      session.status = 'active';
      session.lastStatsAt = now;
      session.lastHeartbeatAt = now;
      this.reporter.save(session);
      this.reporter.publish(session, 'session_start');
    }
    // Later connection counts are saved by the ticker's flush (at most 500 ms later), not one
    // write per connection.
  }

  connectionClosed(session: SessionState, conn: ConnHandle, counted: boolean, reason?: CloseReason): void {
    if (!counted) {
      // A dial that failed (or was cut before it connected): nothing was counted or published.
      if (!session.pending.delete(conn)) return;
      if (!inUse(session)) {
        session.client.active.delete(session);
        if (!session.lingerUntil) this.forget(session);
      }
      return;
    }
    if (!session.open.delete(conn) || session.open.size > 0) return;
    const now = nowMs();
    const grace = this.deps.config.reconnectGraceMs ?? DEFAULT_RECONNECT_GRACE_MS;
    const cutByUs = reason === 'paused' || reason === 'shutdown' || (reason !== undefined && isCapReason(reason));
    if (grace > 0 && session.reusable && !session.capped && !cutByUs && !this.closing) {
      // Stays active for the grace: a reconnection then is not a new session_start/_end pair.
      // Its max_sessions slot is free meanwhile (another session of the client may take it; the
      // reconnection is then checked like a first connection).
      // Its duration stops (and resumes, with the gap, on a reconnection) and its counters are
      // saved now, so the store is never behind while it waits.
      if (session.pending.size === 0) session.client.active.delete(session);
      session.durationMs += now - session.openSince;
      session.openSince = 0;
      session.lastClosedAt = now;
      session.lingerUntil = now + grace;
      this.reporter.save(session);
      return;
    }
    this.finish(session, now);
  }

  /** The session's last connection is gone (at `closedAt`): it goes idle or ended, duration
   *  stops, its max_sessions slot is freed, stats and session_end are published. */
  private finish(session: SessionState, closedAt: number): void {
    session.lingerUntil = 0;
    if (session.openSince) session.durationMs += closedAt - session.openSince;
    session.openSince = 0;
    if (session.pending.size === 0) session.client.active.delete(session);
    if (session.capped || !session.reusable) session.status = 'ended';
    else session.status = 'idle';
    this.reporter.save(session);
    this.reporter.publish(session, 'session_stats');
    session.lastStats = { ...session.totals };
    this.reporter.publish(session, 'session_end');
    this.forget(session);
  }

  /** Ends a session: a cap found at admission, or its expiry (cuts what is still open). */
  private endSession(session: SessionState, reason: CapReason = 'session_cap'): void {
    if (inUse(session)) {
      cutSession(session, reason);
      return;
    }
    if (session.lingerUntil) {
      this.finish(session, session.lastClosedAt);
      return;
    }
    if (session.status === 'ended') return;
    // Expired with nothing open: a created session never started, an idle one already
    // published its session_end when its last connection closed; only its status changes.
    const quiet = reason === 'expired' && session.status !== 'active';
    session.status = 'ended';
    this.reporter.save(session);
    if (!quiet) {
      this.reporter.publish(session, 'session_stats');
      this.reporter.publish(session, 'session_end');
    }
    this.forget(session);
  }

  /** Drops a session without open connections from memory, once its counters are in the store:
   *  one whose last save failed stays (the ticker saves it again), so the stored counters never
   *  end up behind what was counted. */
  private forget(session: SessionState): void {
    if (inUse(session) || session.lingerUntil || this.reporter.unsaved(session)) return;
    this.rateLogged.delete(session.id);
    this.sessions.delete(session.id);
    session.customer.sessions.delete(session);
  }

  saveSoon(session: SessionState): void {
    this.reporter.saveNow(session);
  }

  enforceCaps(customer: CustomerState): void {
    for (const { session, reason } of cutOverCaps(customer, this.deps.log)) this.notifyCapped(session, reason);
  }

  /** Tells the observer (webhooks) that a cap or the expiry cut a session: once a minute per session and reason. */
  private notifyCapped(session: SessionState, reason: CapReason): void {
    const capped = this.deps.observe?.capped;
    if (!capped) return;
    const key = `${session.id}:${reason}`;
    const now = nowMs();
    if ((this.cappedNotified.get(key) ?? -Infinity) > now - 60_000) return;
    if (this.cappedNotified.size > 10_000) this.cappedNotified.clear();
    this.cappedNotified.set(key, now);
    capped(session.customer.id, session.id, reason);
  }

  live(id: string): LiveCounters | undefined {
    const session = this.sessions.get(id);
    if (!session) return undefined;
    return {
      status: session.status,
      uploaded_bytes: session.totals.up,
      downloaded_bytes: session.totals.down,
      duration: durationOf(session, nowMs()),
      open_connections: session.open.size,
    };
  }

  pause(id: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    cutSession(session, 'paused');
    if (session.lingerUntil && !inUse(session)) this.finish(session, session.lastClosedAt);
  }

  limitsChanged(customerId: string): void {
    const customer = this.customers.get(customerId);
    if (!customer) return;
    this.refreshLimits(customer);
  }

  /**
   * A cluster node's share of a customer's limits (clientId null) or of one client's
   * (server/store/grants.ts): `left` is what its grant lets it move from the bytes it has saved
   * (what the runtime counted and not yet saved is taken off here), `final` whether more may
   * come, `rateShare` its part of the speed limits. Kept for entities not in memory yet.
   */
  setClusterShare(customerId: string, clientId: string | null, share: { left: Counters; final: { up: boolean; down: boolean }; rateShare: number } | null): void {
    const key = clientId === null ? customerId : `${customerId}\u0000${clientId}`;
    if (share) this.shares.set(key, share);
    else this.shares.delete(key);
    const customer = this.customers.get(customerId);
    if (!customer) return;
    const entity = clientId === null ? customer : customer.clients.get(clientId);
    if (!entity) return;
    const sessions = new Set([...customer.sessions].filter((x) => clientId === null || x.client === entity));
    const rateBefore = entity.rateShare;
    this.applyShare(entity, share ?? undefined, sessions);
    if (entity.rateShare !== rateBefore) {
      const limits = clientId === null ? customer.limits.global : customer.limits.client;
      setRates(entity.buckets, limits, nowMs(), entity.rateShare);
    }
    if (grantSpent(entity)) this.enforceCaps(customer);
  }

  /** Sets an entity's grant from a share, less what its sessions counted and did not save yet. */
  private applyShare(entity: ClusterShare, share: { left: Counters; final: { up: boolean; down: boolean }; rateShare: number } | undefined, sessions: Set<SessionState>): void {
    if (!share) {
      Object.assign(entity, NO_SHARE());
      return;
    }
    let up = 0, down = 0;
    for (const x of sessions) {
      up += x.totals.up - x.lastSaved.up;
      down += x.totals.down - x.lastSaved.down;
    }
    entity.allow = { up: share.left.up - up, down: share.left.down - down };
    entity.allowFinal = { ...share.final };
    entity.rateShare = share.rateShare;
  }

  /** Re-reads the limits and cuts what is over them; a store error keeps the limits in force. */
  private refreshLimits(customer: CustomerState): void {
    try {
      this.readLimits(customer);
    } catch (err) {
      this.deps.log.error({ err: String(err) }, 'reading limits failed; the last limits read stay in force');
      customer.limitsReadAt = nowMs();
      return;
    }
    this.enforceCaps(customer);
  }

  private tick(): void {
    const now = nowMs();
    // Sessions whose expires_at passed: cut now, and ended like a session over its cap.
    const wall = wallClock();
    for (const session of this.sessions.values()) {
      if (session.expiresAt && wall >= session.expiresAt && !session.capped) {
        session.capped = true;
        this.notifyCapped(session, 'expired');
        this.endSession(session, 'expired');
      }
    }
    const flush = this.reporter.flushDue(now);
    for (const customer of this.customers.values()) {
      if (customer.sessions.size > 0 && now - customer.limitsReadAt >= LIMITS_MAX_AGE_MS) {
        // Safety net: limits are re-read every second even if nobody calls limitsChanged().
        this.refreshLimits(customer);
      }
    }
    if (flush) this.dropUnused(now);
    for (const session of [...this.sessions.values()]) {
      if (session.open.size > 0) this.reporter.report(session, now, flush, this.deps.config);
      else if (session.lingerUntil) {
        if (now >= session.lingerUntil && !inUse(session)) this.finish(session, session.lastClosedAt);
        else this.reporter.report(session, now, flush, this.deps.config);
      } else if (flush && !inUse(session)) {
        // Closed, but its last save failed: try again, then let it go.
        this.reporter.save(session);
        this.forget(session);
      }
    }
  }

  /**
   * Lets go of the state of clients and customers that have no session in memory and whose token
   * buckets owe nothing (a bucket in debt is still shaping: dropping it would hand its client a
   * fresh burst). State made again later reads its totals from the store, where every forgotten
   * session's counters already are (forget() keeps a session until it is saved).
   */
  private dropUnused(now: number): void {
    const idle = (b: Buckets) => b.up.debtMs(now) === 0 && b.down.debtMs(now) === 0;
    for (const customer of [...this.customers.values()]) {
      const used = new Set<ClientState>();
      for (const session of customer.sessions) used.add(session.client);
      for (const client of [...customer.clients.values()]) {
        if (!used.has(client) && client.active.size === 0 && idle(client.buckets)) customer.clients.delete(client.id);
      }
      if (customer.sessions.size === 0 && customer.clients.size === 0 && idle(customer.buckets)) this.customers.delete(customer.id);
    }
  }

  /** How much state the runtime holds (diagnostics and tests). */
  size(): { customers: number; clients: number; sessions: number } {
    let clients = 0;
    for (const customer of this.customers.values()) clients += customer.clients.size;
    return { customers: this.customers.size, clients, sessions: this.sessions.size };
  }

  /** Closes every connection (their close paths flush and publish) and stops the timer. */
  shutdown(): void {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    for (const session of [...this.sessions.values()]) cutSession(session, 'shutdown');
    for (const session of [...this.sessions.values()]) {
      if (session.lingerUntil && !inUse(session)) this.finish(session, session.lastClosedAt);
    }
    for (const session of this.sessions.values()) this.reporter.save(session);
  }
}
