// Cutting connections: those over a byte cap (a session over its own cap is marked to end),
// and every connection of a session (pause, shutdown). The connections' own close paths
// then release their leases, which saves and reports.
import { clientBlock } from '../contract/client-limits.ts';
import type { Logger } from '../domain.ts';
import { wallClock } from '../time.ts';
import type { CapReason, CloseReason } from './close-reason.ts';
import { type CustomerState, type SessionState, grantSpent, inUse, overCap } from './meters.ts';

/** Closes every connection of the session, open or still dialling, with `reason`. */
export function cutSession(session: SessionState, reason: CloseReason): void {
  for (const conn of [...session.pending, ...session.open]) conn.close(reason);
}

/** Closes what is over a cap: the session's own cap ends the session. Returns what was cut, and why. */
export function cutOverCaps(customer: CustomerState, log: Logger): Array<{ session: SessionState; reason: CapReason }> {
  const cut: Array<{ session: SessionState; reason: CapReason }> = [];
  cutBlockedClients(customer, cut);
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
    } else if (overCap(session.client.limits, session.client.totals, session.client.capBase) || grantSpent(session.client)) reason = 'client_cap';
    else if (globalOver) reason = 'global_cap';
    if (reason) {
      cutSession(session, reason);
      cut.push({ session, reason });
    }
  }
  return cut;
}

/**
 * Closes every connection of the sessions of clients that may not connect (clients extension):
 * disabled (cut at once), or past their expires_at (cut like an expiry). The sessions stay as
 * they are: enabled again, or given a later expiry, the client connects again.
 */
function cutBlockedClients(customer: CustomerState, cut: Array<{ session: SessionState; reason: CapReason }>): void {
  const now = wallClock();
  for (const session of customer.sessions) {
    const block = inUse(session) ? clientBlock(session.client.control, now) : undefined;
    if (block === 'client_disabled') cutSession(session, 'client_disabled');
    else if (block) {
      cutSession(session, 'expired');
      cut.push({ session, reason: 'expired' });
    }
  }
}
