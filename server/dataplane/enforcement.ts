// Cutting connections: those over a byte cap (a session over its own cap is marked to end),
// and every connection of a session (pause, shutdown). The connections' own close paths
// then release their leases, which saves and reports.
import type { Logger } from '../domain.ts';
import type { CapReason, CloseReason } from './close-reason.ts';
import { type CustomerState, type SessionState, grantSpent, inUse, overCap } from './meters.ts';

/** Closes every connection of the session, open or still dialling, with `reason`. */
export function cutSession(session: SessionState, reason: CloseReason): void {
  for (const conn of [...session.pending, ...session.open]) conn.close(reason);
}

/** Closes what is over a cap: the session's own cap ends the session. Returns what was cut, and why. */
export function cutOverCaps(customer: CustomerState, log: Logger): Array<{ session: SessionState; reason: CapReason }> {
  const cut: Array<{ session: SessionState; reason: CapReason }> = [];
  const globalOver = overCap(customer.limits.global, customer.totals, customer.capBase) || grantSpent(customer);
  for (const session of [...customer.sessions]) {
    if (!inUse(session)) continue;
    let reason: CapReason | undefined;
    if (overCap(customer.limits.session, session.totals, session.capBase)) {
      // A lifetime cap ends the session; a periodic one only cuts it until the period turns.
      if (session.capPeriod < 0) {
        session.capped = true;
        if (session.status !== 'ended') {
          log.info({ session: session.short }, 'session byte cap reached; ending session');
        }
      }
      reason = 'session_cap';
    } else if (overCap(customer.limits.client, session.client.totals, session.client.capBase) || grantSpent(session.client)) reason = 'client_cap';
    else if (globalOver) reason = 'global_cap';
    if (reason) {
      cutSession(session, reason);
      cut.push({ session, reason });
    }
  }
  return cut;
}
