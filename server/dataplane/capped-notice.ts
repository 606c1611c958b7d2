// Telling the observer (webhooks) that a cap or the expiry cut a session: once a minute per
// session and reason, whatever the number of connections cut.
import type { DataPlaneDeps } from './api.ts';
import type { CapReason } from './close-reason.ts';
import { type SessionState, nowMs } from './meters.ts';

const NOTICE_INTERVAL_MS = 60_000;
/** The remembered notices are dropped past this many (a bound, not a rule). */
const MAX_REMEMBERED = 10_000;

export class CappedNotice {
  private readonly deps: DataPlaneDeps;
  /** When a session's cap or expiry was last told to the observer. */
  private readonly notified = new Map<string, number>();

  constructor(deps: DataPlaneDeps) {
    this.deps = deps;
  }

  notify(session: SessionState, reason: CapReason): void {
    const capped = this.deps.observe?.capped;
    if (!capped) return;
    const key = `${session.id}:${reason}`;
    const now = nowMs();
    if ((this.notified.get(key) ?? -Infinity) > now - NOTICE_INTERVAL_MS) return;
    if (this.notified.size > MAX_REMEMBERED) this.notified.clear();
    this.notified.set(key, now);
    capped(session.customer.id, session.id, reason);
  }
}
