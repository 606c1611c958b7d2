// The runtime of sessions with open connections: it holds the meters (meters.ts) of every
// customer and client (entities.ts) and session (session-life.ts) in memory, admits connections
// (admission.ts, session-admission.ts, conn-rate.ts), hands each a Lease (lease.ts), cuts what is
// over a limit (enforcement.ts, capped-notice.ts) and reports counters and events (reporter.ts). Every inbound (VLESS over ws or tcp, the HTTP proxy) goes through
// admit() and then moves its bytes through its Lease, so all traffic is counted and limited
// the same way.
import type { DataPlaneDeps, LiveCounters } from './api.ts';
import type { CloseReason } from './close-reason.ts';
import type { SessionRow } from '../domain.ts';
import { wallClock } from '../time.ts';
import { clientBlock } from '../contract/client-limits.ts';
import { type Refusal, isFloodRefusal, refusalOfSession } from './admission.ts';
import { CappedNotice } from './capped-notice.ts';
import { ConnRate } from './conn-rate.ts';
import { cutOverCaps, cutSession } from './enforcement.ts';
import { Entities, type Share } from './entities.ts';
import { Lease, type LeaseOwner } from './lease.ts';
import { type ClientState, type ConnHandle, type CustomerState, type SessionState, durationOf, grantSpent, idShort, inUse, nowMs } from './meters.ts';
import { Reporter, startTicker } from './reporter.ts';
import { SessionLife } from './session-life.ts';
import { limitRefusal, newSession } from './session-admission.ts';
import { type ConnectionView, RefusalLog, type RefusalSubject, type Transport } from './support.ts';

export { DEFAULT_CONNECTION_BURST, DEFAULT_CONNECTION_RATE } from './conn-rate.ts';
export { DEFAULT_MAX_CONNECTIONS_PER_SESSION } from './session-admission.ts';
export { DEFAULT_RECONNECT_GRACE_MS } from './session-life.ts';

export type AdmitResult = { ok: true; lease: Lease } | { ok: false; reason: Refusal };

/** Limits are never older than this when a connection is admitted or a tick runs. */
const LIMITS_MAX_AGE_MS = 1000;

export class Runtime implements LeaseOwner {
  private readonly deps: DataPlaneDeps;
  private readonly reporter: Reporter;
  private readonly entities: Entities;
  private readonly connRate: ConnRate;
  private readonly cappedNotice: CappedNotice;
  private readonly life: SessionLife;
  private timer: NodeJS.Timeout | undefined;
  /** The recent refusals of this data plane, per session and client (support's view). */
  readonly refusals = new RefusalLog();

  constructor(deps: DataPlaneDeps) {
    this.deps = deps;
    this.reporter = new Reporter(deps);
    this.entities = new Entities(deps);
    this.connRate = new ConnRate(deps);
    this.cappedNotice = new CappedNotice(deps);
    this.life = new SessionLife(deps, this.reporter, this.connRate);
  }

  start(): void {
    this.timer = startTicker(this.deps.config, () => this.tick());
  }

  /**
   * Decides whether a connection for `sessionId` may open; on success it holds the session's
   * place and is counted once its lease is committed (the destination reached). Never
   * throws: it runs inside socket handlers, so a store error (disk gone, database locked) is a
   * refusal ('unavailable') and a log line, not an uncaught exception.
   */
  admit(sessionId: string, conn: ConnHandle, origin?: { transport: Transport; remote: string }): AdmitResult {
    let result: AdmitResult;
    try {
      result = this.tryAdmit(sessionId, conn);
    } catch (err) {
      this.deps.log.error({ session: idShort(sessionId), err: String(err) }, 'admission failed: store unavailable');
      result = { ok: false, reason: 'unavailable' };
    }
    if (!result.ok) {
      this.deps.observe?.refused(result.reason);
      if (origin) this.refused(sessionId, result.reason, origin.transport, origin.remote);
    }
    return result;
  }

  /** Records a refusal (an admission's, or an inbound's own: proxy credential, egress) for support. */
  refused(sessionId: string, reason: string, transport: Transport, remote: string): void {
    this.refusals.record(this.subjectOf(sessionId), reason, transport, remote);
  }

  /** Whose session it is, from memory (a churning session: no store read) or the store. */
  private subjectOf(sessionId: string): RefusalSubject {
    const known = this.life.all.get(sessionId);
    if (known) return { sessionId, customerId: known.customer.id, clientId: known.client.id };
    try {
      const row = this.deps.store.getSession(sessionId);
      return row ? { sessionId, customerId: row.customer_id, clientId: row.client_id } : { sessionId };
    } catch {
      return { sessionId };
    }
  }

  /** The session's connections relaying now (support's view), at most its connection cap. */
  connectionsOf(sessionId: string): ConnectionView[] {
    const session = this.life.all.get(sessionId);
    if (!session) return [];
    const out: ConnectionView[] = [];
    for (const conn of session.open) {
      const v = conn.view?.();
      if (v) out.push(v);
    }
    return out;
  }

  /** Connections relaying now, per zone (metrics). */
  openByZone(): Array<{ zone: string; count: number }> {
    const byZone = new Map<string, number>();
    for (const s of this.life.all.values()) if (s.open.size) byZone.set(s.zone, (byZone.get(s.zone) ?? 0) + s.open.size);
    return [...byZone].map(([zone, count]) => ({ zone, count }));
  }

  private tryAdmit(sessionId: string, conn: ConnHandle): AdmitResult {
    const known = this.life.all.get(sessionId);
    // The connection rate first, before any store read: a churning session is refused cheaply.
    if (known && !this.connRate.take(known)) return { ok: false, reason: 'connection_rate' };
    const row = this.life.closing ? undefined : this.deps.store.getSession(sessionId);
    const early = refusalOfSession({ closing: this.life.closing, row, live: known });
    if (early || !row) return { ok: false, reason: early ?? 'unknown' };
    const { session, customer, client } = this.sessionOf(row, known);
    // The row is read at every admission: its expires_at holds from now (ticks end it on time).
    session.expiresAt = row.expires_at ? Date.parse(row.expires_at) || 0 : 0;
    if (session.expiresAt && wallClock() >= session.expiresAt) {
      this.life.hold(session);
      session.capped = true;
      if (session.status === 'active') this.cappedNotice.notify(session, 'expired');
      this.life.end(session, 'expired');
      return { ok: false, reason: 'expired' };
    }
    // The client disabled or past its expires_at (clients extension): refused, the session as it is.
    const block = clientBlock(client.control, wallClock());
    if (block) return { ok: false, reason: block };
    const refusal = limitRefusal(this.deps, session, client, customer);
    // A lifetime session cap ends the session; a periodic one refuses until the period turns.
    if (refusal === 'session_cap' && session.capPeriod < 0) {
      // Over its own cap: the session ends now, not only this connection.
      this.life.hold(session);
      session.capped = true;
      this.life.end(session);
    }
    if (refusal && isFloodRefusal(refusal)) this.connRate.logFlood(session, refusal);
    if (refusal) return { ok: false, reason: refusal };
    this.life.hold(session);
    session.pending.add(conn);
    client.active.add(session);
    return { ok: true, lease: new Lease(this, session, conn) };
  }

  /** The session in memory for a row just read (made on its first admission), its customer's limits fresh. */
  private sessionOf(row: SessionRow, known: SessionState | undefined): { session: SessionState; customer: CustomerState; client: ClientState } {
    const customer = this.entities.customer(row.customer_id);
    const now = nowMs();
    if (now - customer.limitsReadAt >= LIMITS_MAX_AGE_MS) this.entities.readLimits(customer);
    const client = this.entities.client(customer, row.client_id);
    if (known) return { session: known, customer, client };
    const session = newSession(row, customer, client, now, this.connRate.burst);
    this.entities.countFrom(customer, 'session', session, wallClock());
    return { session, customer, client };
  }

  connectionOpened(session: SessionState, conn: ConnHandle): void {
    this.life.opened(session, conn);
  }

  connectionClosed(session: SessionState, conn: ConnHandle, counted: boolean, reason?: CloseReason): void {
    this.life.closed(session, conn, counted, reason);
  }

  saveSoon(session: SessionState): void {
    this.reporter.saveNow(session);
  }

  enforceCaps(customer: CustomerState): void {
    for (const { session, reason } of cutOverCaps(customer, this.deps.log)) this.cappedNotice.notify(session, reason);
  }

  live(id: string): LiveCounters | undefined {
    const session = this.life.all.get(id);
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
    const session = this.life.all.get(id);
    if (!session) return;
    cutSession(session, 'paused');
    if (session.lingerUntil && !inUse(session)) this.life.finish(session, session.lastClosedAt);
  }

  limitsChanged(customerId: string): void {
    const customer = this.entities.customers.get(customerId);
    if (!customer) return;
    this.refreshLimits(customer);
  }

  /**
   * A cluster node's share of a customer's limits (clientId null) or of one client's
   * (server/store/grants.ts): `left` is what its grant lets it move from the bytes it has saved
   * (what the runtime counted and not yet saved is taken off here), `final` whether more may
   * come, `rateShare` its part of the speed limits. Kept for entities not in memory yet.
   */
  setClusterShare(customerId: string, clientId: string | null, share: Share | null): void {
    const applied = this.entities.setShare(customerId, clientId, share);
    if (applied && grantSpent(applied.entity)) this.enforceCaps(applied.customer);
  }

  /** Re-reads the limits and cuts what is over them; a store error keeps the limits in force. */
  private refreshLimits(customer: CustomerState): void {
    try {
      this.entities.readLimits(customer);
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
    for (const session of this.life.all.values()) {
      if (session.expiresAt && wall >= session.expiresAt && !session.capped) {
        session.capped = true;
        this.cappedNotice.notify(session, 'expired');
        this.life.end(session, 'expired');
      }
    }
    const flush = this.reporter.flushDue(now);
    for (const customer of this.entities.customers.values()) {
      if (customer.sessions.size > 0 && now - customer.limitsReadAt >= LIMITS_MAX_AGE_MS) {
        // Safety net: limits are re-read every second even if nobody calls limitsChanged().
        this.refreshLimits(customer);
      }
    }
    if (flush) this.entities.dropUnused(now);
    for (const session of [...this.life.all.values()]) {
      if (session.open.size > 0) this.reporter.report(session, now, flush, this.deps.config);
      else if (session.lingerUntil) {
        if (now >= session.lingerUntil && !inUse(session)) this.life.finish(session, session.lastClosedAt);
        else this.reporter.report(session, now, flush, this.deps.config);
      } else if (flush && !inUse(session)) {
        // Closed, but its last save failed: try again, then let it go.
        this.reporter.save(session);
        this.life.forget(session);
      }
    }
  }

  /** How much state the runtime holds (diagnostics and tests). */
  size(): { customers: number; clients: number; sessions: number } {
    let clients = 0;
    for (const customer of this.entities.customers.values()) clients += customer.clients.size;
    return { customers: this.entities.customers.size, clients, sessions: this.life.all.size };
  }

  /** Closes every connection (their close paths flush and publish) and stops the timer. */
  shutdown(): void {
    this.life.closing = true;
    if (this.timer) clearInterval(this.timer);
    for (const session of [...this.life.all.values()]) cutSession(session, 'shutdown');
    for (const session of [...this.life.all.values()]) {
      if (session.lingerUntil && !inUse(session)) this.life.finish(session, session.lastClosedAt);
    }
    for (const session of this.life.all.values()) this.reporter.save(session);
  }
}
