// What Settings → Webhooks says of an endpoint's health: disabled by the server after failing
// (with the server's reason), turned off by the owner, failing right now, or fine; and how many
// pending deliveries were dropped because too many were waiting.
import type { Webhook } from '../../../common/api-types.ts';
import { formatDateTime } from './format.ts';

export interface WebhookState {
  badge: 'disabled' | 'off' | 'failing' | 'ok';
  /** The badge's words. */
  label: string;
  /** A sentence under the URL, or null. */
  detail: string | null;
  /** A sentence about dropped deliveries, or null. */
  dropped: string | null;
}

type Health = Pick<Webhook, 'enabled' | 'disabled_reason' | 'disabled_at' | 'failing_since' | 'consecutive_failures' | 'dropped'>;

export function webhookState(h: Health): WebhookState {
  const dropped = h.dropped > 0 ? `${h.dropped} pending ${h.dropped === 1 ? 'delivery was' : 'deliveries were'} dropped (too many were waiting).` : null;
  if (!h.enabled && h.disabled_reason) {
    const when = h.disabled_at ? ` on ${formatDateTime(h.disabled_at)}` : '';
    return { badge: 'disabled', label: 'disabled by the server', detail: `Disabled${when}: ${h.disabled_reason}. Fix the receiver, then enable it again.`, dropped };
  }
  if (!h.enabled) return { badge: 'off', label: 'off', detail: null, dropped };
  if (h.consecutive_failures > 0) {
    const since = h.failing_since ? ` since ${formatDateTime(h.failing_since)}` : '';
    const n = h.consecutive_failures;
    return { badge: 'failing', label: 'failing', detail: `Failing${since}: ${n} ${n === 1 ? 'attempt' : 'attempts'} in a row.`, dropped };
  }
  return { badge: 'ok', label: 'ok', detail: null, dropped };
}
