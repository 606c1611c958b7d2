// How webhooks appear: the endpoint and delivery records of the API (contract/webhooks.ts),
// and the JSON body every delivery POSTs ({id, type, created_at, data}).
import type { Webhook, WebhookDelivery, WebhookEventKind } from '../contract/webhooks.ts';
import type { DeliveryRow, LoggedEvent, QueuedEvent, WebhookRow } from '../store/repos/webhooks.ts';
import { shownError } from './send.ts';
import { isoNow } from '../time.ts';

export function envelope(id: string, kind: string, createdAt: string, data: Record<string, unknown>): string {
  return JSON.stringify({ id, type: kind, created_at: createdAt, data });
}

/** An event of a kind outside the event log as an outbox entry: ordered per session when it names one, else per customer. */
export function queuedKind(customerId: string, kind: string, data: Record<string, unknown>, sessionId?: string): QueuedEvent {
  const createdAt = isoNow();
  return { customerId, kind, orderKey: sessionId ? `session:${sessionId}` : `customer`, createdAt, body: (id) => envelope(id, kind, createdAt, data) };
}

/** A session event of the log as an outbox entry: ordered per session. */
export function toQueued(e: LoggedEvent): QueuedEvent {
  const data = {
    event_id: e.id,
    session_id: e.session_id,
    event_type: e.event_type,
    created_at: e.created_at,
    duration: e.duration,
    uploaded_bytes: e.uploaded_bytes,
    downloaded_bytes: e.downloaded_bytes,
  };
  return { customerId: e.customer_id, kind: e.event_type, orderKey: `session:${e.session_id}`, createdAt: e.created_at, body: (id) => envelope(id, e.event_type, e.created_at, data) };
}

export function view(r: WebhookRow): Webhook {
  return {
    id: r.id,
    url: r.url,
    events: r.events as WebhookEventKind[],
    enabled: r.enabled,
    secret_prefix: r.secret_prefix,
    created_at: r.created_at,
    updated_at: r.updated_at,
    consecutive_failures: r.consecutive_failures,
    failing_since: r.failing_since,
    disabled_reason: r.disabled_reason,
    disabled_at: r.disabled_at,
    dropped: r.dropped,
    last_error: shownError(r.last_error),
    last_error_at: r.last_error_at,
    next_retry_at: r.next_retry_at === null ? null : new Date(r.next_retry_at).toISOString(),
  };
}

export function deliveryView(d: DeliveryRow): WebhookDelivery {
  return {
    id: d.id,
    event: d.event_type as WebhookEventKind,
    status: d.status,
    attempts: d.attempts,
    response_status: d.last_status_code,
    error: shownError(d.last_error),
    next_attempt_at: d.status === 'pending' ? new Date(d.next_attempt_at).toISOString() : null,
    created_at: d.created_at,
    delivered_at: d.delivered_at,
  };
}
