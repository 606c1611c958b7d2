// What Settings → Webhooks says of an endpoint's health: disabled by the server after failing
// (with the server's reason), turned off by the owner, failing right now, or fine; its last error
// and when, in words; the next retry only while it lies ahead (a retry due in the past reads as
// nothing, never "retrying <a past time>"); how many pending deliveries were dropped; and what a
// "Send test" answered ("Delivered: 200 in 35 ms", "Failed: connection refused").
import type { Webhook, WebhookDelivery, WebhookTestResult } from '../../../common/api-types.ts';
import { spanWords, timeAgo, timeUntil } from './when.ts';

export interface WebhookState {
  badge: 'disabled' | 'off' | 'failing' | 'ok';
  /** The badge's words. */
  label: string;
  /** A sentence under the URL, or null. */
  detail: string | null;
  /** "Last error 5 minutes ago: connection refused", or null. */
  lastError: string | null;
  /** "Next retry in 40 seconds" while a retry is due ahead, else null. */
  nextRetry: string | null;
  /** A sentence about dropped deliveries, or null. */
  dropped: string | null;
}

type Health = Pick<Webhook, 'enabled' | 'disabled_reason' | 'disabled_at' | 'failing_since' | 'consecutive_failures' | 'dropped'> &
  Partial<Pick<Webhook, 'last_error' | 'last_error_at' | 'next_retry_at'>>;

/** An error as a person reads it: the server's text without its code ("ECONNREFUSED: connection refused" → "connection refused"). */
export function errorWords(error: string): string {
  return error.replace(/^[A-Z][A-Z0-9_]*: /, '');
}

export function webhookState(h: Health, now = Date.now()): WebhookState {
  const dropped = h.dropped > 0 ? `${h.dropped} pending ${h.dropped === 1 ? 'delivery was' : 'deliveries were'} dropped (too many were waiting).` : null;
  const lastError = h.last_error ? `Last error ${h.last_error_at ? `${timeAgo(h.last_error_at, now)}: ` : ': '}${errorWords(h.last_error)}` : null;
  const retryIn = h.enabled && h.next_retry_at ? timeUntil(h.next_retry_at, now) : null;
  const nextRetry = retryIn ? `Next retry ${retryIn}` : null;
  const base = { lastError, nextRetry, dropped };
  if (!h.enabled && h.disabled_reason) {
    const when = h.disabled_at ? ` ${timeAgo(h.disabled_at, now)}` : '';
    return { ...base, badge: 'disabled', label: 'Disabled', detail: `Disabled by the server${when}: ${h.disabled_reason}. Fix the receiver, then enable it again.` };
  }
  if (!h.enabled) return { ...base, badge: 'off', label: 'Off', detail: null };
  if (h.consecutive_failures > 0) {
    const failingMs = h.failing_since ? now - Date.parse(h.failing_since) : 0;
    const since = failingMs >= 5000 ? ` for ${spanWords(failingMs)}` : '';
    const n = h.consecutive_failures;
    return { ...base, badge: 'failing', label: 'Failing', detail: `Failing${since}: ${n} ${n === 1 ? 'attempt' : 'attempts'} in a row.` };
  }
  return { ...base, badge: 'ok', label: 'OK', detail: null };
}

/** What a delivery's status reads: delivered, failed, queued (not tried yet), "retry in 2 minutes", or "retrying now". */
export function deliveryStatus(d: Pick<WebhookDelivery, 'status' | 'attempts' | 'next_attempt_at'>, now = Date.now()): string {
  if (d.status !== 'pending') return d.status;
  if (d.attempts === 0) return 'queued';
  const ahead = d.next_attempt_at ? timeUntil(d.next_attempt_at, now) : null;
  return ahead ? `retry ${ahead}` : 'retrying now';
}

/** What "Send test" answered, in words. */
export function testResultText(r: WebhookTestResult): { ok: boolean; text: string } {
  if (r.delivered) return { ok: true, text: `Delivered: ${r.status_code} in ${r.duration_ms} ms` };
  if (r.status_code !== null) return { ok: false, text: `Failed: HTTP ${r.status_code} in ${r.duration_ms} ms` };
  return { ok: false, text: `Failed: ${errorWords(r.error ?? 'no answer')}` };
}
