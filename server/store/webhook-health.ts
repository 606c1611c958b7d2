// The health of a webhook endpoint, shared by both databases: how many attempts failed in a
// row and since when, what the outbox dropped for it, and the rule that disables it. An endpoint
// that keeps failing is disabled by the server (enabled = false, disabled_reason set) and its
// pending deliveries are marked failed, so a dead endpoint's backlog neither grows nor holds a
// sender; enabling it again (PATCH enabled: true) starts a new count.

/** When an endpoint is disabled: after `maxFailures` failed attempts in a row, or after failing for `maxFailingMs`. */
export interface DisableRule {
  maxFailures: number;
  maxFailingMs: number;
}

export interface Health {
  consecutive_failures: number;
  failing_since: string | null;
}

/** The error of the pending deliveries of an endpoint the server disabled. */
export const NOT_SENT_DISABLED = 'not sent: the endpoint was disabled after failing';

/** One more failed attempt: the new counters, and the reason to disable the endpoint, if any. */
export function afterFailure(h: Health, now: Date, rule: DisableRule): Health & { disabledReason: string | null } {
  const n = h.consecutive_failures + 1;
  const since = h.failing_since ?? now.toISOString();
  let disabledReason: string | null = null;
  if (n >= rule.maxFailures) disabledReason = `${n} delivery attempts failed in a row`;
  else if (now.getTime() - Date.parse(since) >= rule.maxFailingMs) disabledReason = `deliveries failed for ${duration(now.getTime() - Date.parse(since))} without a success`;
  return { consecutive_failures: n, failing_since: since, disabledReason };
}

function duration(ms: number): string {
  if (ms >= 3_600_000) return `${Math.floor(ms / 3_600_000)} h`;
  if (ms >= 60_000) return `${Math.floor(ms / 60_000)} min`;
  return `${Math.floor(ms / 1000)} s`;
}

/**
 * Drops the oldest pending deliveries of an endpoint beyond the newest `cap` (SQLite `?`,
 * PostgreSQL `$n` placeholders: endpoint id, endpoint id, cap).
 */
export function trimSql(ph: (i: number) => string): string {
  return `DELETE FROM webhook_deliveries WHERE webhook_id = ${ph(1)} AND status = 'pending' AND seq <= (
    SELECT seq FROM webhook_deliveries WHERE webhook_id = ${ph(2)} AND status = 'pending' ORDER BY seq DESC LIMIT 1 OFFSET ${ph(3)})`;
}
