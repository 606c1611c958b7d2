// The life of a session in memory: held while it has connections (or lingers for a
// reconnection), started by its first counted connection, finished (idle or ended) by its last,
// ended early by a cap or its expiry, and forgotten once its counters are saved.
import type { DataPlaneDeps } from './api.ts';
import { type CapReason, type CloseReason, isCapReason } from './close-reason.ts';
import type { ConnRate } from './conn-rate.ts';
import { cutSession } from './enforcement.ts';
import { type ConnHandle, type SessionState, inUse, nowMs } from './meters.ts';
import type { Reporter } from './reporter.ts';

/** How long a session whose last connection closed stays active, waiting for a reconnection. */
export const DEFAULT_RECONNECT_GRACE_MS = 2000;

export class SessionLife {
  private readonly deps: DataPlaneDeps;
  private readonly reporter: Reporter;
  private readonly connRate: ConnRate;
  /** The sessions in memory, by id. */
  readonly all = new Map<string, SessionState>();
  /** Shutting down: no session lingers for a reconnection. */
  closing = false;

  constructor(deps: DataPlaneDeps, reporter: Reporter, connRate: ConnRate) {
    this.deps = deps;
    this.reporter = reporter;
    this.connRate = connRate;
  }

  /** Keeps a session in memory, among its customer's. */
  hold(session: SessionState): void {
    this.all.set(session.id, session);
    session.customer.sessions.add(session);
  }

  /** The connection reached its destination: counted now; the first one starts the session,
   *  unless the session is still active from a connection closed within the grace. */
  opened(session: SessionState, conn: ConnHandle): void {
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

  closed(session: SessionState, conn: ConnHandle, counted: boolean, reason?: CloseReason): void {
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
    const cutByUs = reason === 'paused' || reason === 'client_disabled' || reason === 'shutdown' || (reason !== undefined && isCapReason(reason));
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
  finish(session: SessionState, closedAt: number): void {
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
  end(session: SessionState, reason: CapReason = 'session_cap'): void {
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
  forget(session: SessionState): void {
    if (inUse(session) || session.lingerUntil || this.reporter.unsaved(session)) return;
    this.connRate.forget(session.id);
    this.all.delete(session.id);
    session.customer.sessions.delete(session);
  }
}
