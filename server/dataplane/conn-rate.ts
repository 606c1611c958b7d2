// The per-session connection rate (a token bucket of new connections) and the one log line per
// session and interval that a flood of refused connections earns.
import type { DataPlaneDeps } from './api.ts';
import type { Refusal } from './admission.ts';
import { type SessionState, nowMs } from './meters.ts';

/** New connections per session per second, and the burst above it. */
export const DEFAULT_CONNECTION_RATE = 50;
export const DEFAULT_CONNECTION_BURST = 100;
/** At most one log line per session per this interval for refusals by the connection rate. */
const RATE_LOG_INTERVAL_MS = 10_000;

export class ConnRate {
  private readonly deps: DataPlaneDeps;
  /** When a session's connection-rate refusals were last logged. */
  private readonly logged = new Map<string, number>();

  constructor(deps: DataPlaneDeps) {
    this.deps = deps;
  }

  get burst(): number {
    return this.deps.config.connectionBurst ?? DEFAULT_CONNECTION_BURST;
  }

  /** Takes one token of the session's connection-rate bucket; false when it is empty. */
  take(session: SessionState): boolean {
    const now = nowMs();
    const rate = this.deps.config.connectionRatePerSecond ?? DEFAULT_CONNECTION_RATE;
    session.connTokens = Math.min(this.burst, session.connTokens + ((now - session.connTokensAt) * rate) / 1000);
    session.connTokensAt = now;
    if (session.connTokens >= 1) {
      session.connTokens -= 1;
      return true;
    }
    this.logFlood(session, 'connection_rate');
    return false;
  }

  /** Logs a flood refusal (isFloodRefusal) at most once per session per RATE_LOG_INTERVAL_MS. */
  logFlood(session: SessionState, reason: Refusal): void {
    const now = nowMs();
    const logged = this.logged.get(session.id);
    if (logged !== undefined && now - logged < RATE_LOG_INTERVAL_MS) return;
    this.logged.set(session.id, now);
    const what = reason === 'connection_rate' ? 'over the session\'s connection rate' : 'over the session\'s open-connection cap';
    this.deps.log.warn({ session: session.short, reason }, `new connections ${what} are refused`);
  }

  /** The session left memory. */
  forget(sessionId: string): void {
    this.logged.delete(sessionId);
  }
}
