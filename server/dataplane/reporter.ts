// What the runtime tells the rest of the server: session counters saved to the store (only
// when they changed), session events published (start, stats, heartbeat, end), and the ticker
// that flushes counters and sends the periodic events while connections are open.
import type { EventType } from '../domain.ts';
import type { DataPlaneConfig, DataPlaneDeps } from './api.ts';
import { throttledLine } from '../log.ts';
import { type SessionState, durationOf, nowMs } from './meters.ts';

/** How often counters of open sessions are flushed to the store. */
const FLUSH_INTERVAL_MS = 500;
/** While saves fail (the database away, a full disk), one log line this often, not one per session and flush. */
const FAILURE_LINE_MS = 10_000;

export class Reporter {
  private readonly deps: Pick<DataPlaneDeps, 'store' | 'events' | 'log' | 'usage' | 'observe'>;
  private lastFlush = 0;
  /** After a failed save, saves between flushes wait until then (no retry per chunk). */
  private retryAt = 0;
  private readonly saveFailed = throttledLine(FAILURE_LINE_MS);
  private readonly publishFailed = throttledLine(FAILURE_LINE_MS);

  constructor(deps: Pick<DataPlaneDeps, 'store' | 'events' | 'log' | 'usage' | 'observe'>) {
    this.deps = deps;
  }

  /** Persists the session's counters, status and connection count when any of them changed; the
   *  bytes the save added go to the usage history (deps.usage), once, only when it succeeded. */
  save(session: SessionState): void {
    const duration = durationOf(session, nowMs());
    const last = session.lastSaved;
    if (last.up === session.totals.up && last.down === session.totals.down && last.duration === duration && last.status === session.status && last.connections === session.connections) return;
    try {
      this.deps.store.saveRuntime(session.id, { status: session.status, uploaded_bytes: session.totals.up, downloaded_bytes: session.totals.down, duration, connections: session.connections });
      const up = session.totals.up - last.up;
      const down = session.totals.down - last.down;
      session.lastSaved = { up: session.totals.up, down: session.totals.down, duration, status: session.status, connections: session.connections };
      if (up > 0 || down > 0) {
        this.deps.usage?.add(session.id, up, down);
        this.deps.observe?.moved(session.zone, up, down);
      }
    } catch (err) {
      this.retryAt = nowMs() + FLUSH_INTERVAL_MS;
      // The counters stay in memory: the next save that works writes them whole.
      this.saveFailed((alike) => this.deps.log.error({ session: session.short, err: String(err), ...alike }, 'saving session runtime failed'));
    }
  }

  /** A save between flushes (SAVE_BYTES moved): skipped for a moment after a failed save. */
  saveNow(session: SessionState): void {
    if (this.retryAt && nowMs() < this.retryAt) return;
    this.save(session);
  }

  /** Whether the store is behind the session's counters (the last save failed or none ran yet). */
  unsaved(session: SessionState): boolean {
    const last = session.lastSaved;
    return last.up !== session.totals.up || last.down !== session.totals.down || last.status !== session.status || last.connections !== session.connections;
  }

  publish(session: SessionState, type: EventType): void {
    try {
      this.deps.events.publish({
        customerId: session.customer.id,
        sessionId: session.id,
        type,
        duration: durationOf(session, nowMs()),
        uploaded_bytes: session.totals.up,
        downloaded_bytes: session.totals.down,
      });
    } catch (err) {
      this.publishFailed((alike) => this.deps.log.error({ session: session.short, err: String(err), ...alike }, 'publishing event failed'));
    }
  }

  /** Whether this tick flushes counters (at most every FLUSH_INTERVAL_MS). */
  flushDue(now: number): boolean {
    if (now - this.lastFlush < FLUSH_INTERVAL_MS) return false;
    this.lastFlush = now;
    return true;
  }

  /** One tick for a session with open connections: flush, then stats and heartbeat when due. */
  report(session: SessionState, now: number, flush: boolean, config: Pick<DataPlaneConfig, 'statsIntervalMs' | 'heartbeatIntervalMs'>): void {
    if (flush) this.save(session);
    if (now - session.lastStatsAt >= config.statsIntervalMs) {
      session.lastStatsAt = now;
      if (session.totals.up !== session.lastStats.up || session.totals.down !== session.lastStats.down) {
        session.lastStats = { ...session.totals };
        this.publish(session, 'session_stats');
      }
    }
    if (now - session.lastHeartbeatAt >= config.heartbeatIntervalMs) {
      session.lastHeartbeatAt = now;
      this.publish(session, 'session_heartbeat');
    }
  }
}

/** Runs `tick` often enough for the shortest of the stats and heartbeat intervals (10-250 ms). */
export function startTicker(config: Pick<DataPlaneConfig, 'statsIntervalMs' | 'heartbeatIntervalMs'>, tick: () => void): NodeJS.Timeout {
  const interval = Math.max(10, Math.min(250, config.statsIntervalMs, config.heartbeatIntervalMs));
  const timer = setInterval(tick, interval);
  timer.unref();
  return timer;
}
