// What happens when the server disables an endpoint that kept failing (server/store/repos/webhooks.ts):
// the server log says so, the audit trail records it (actor `server`), and the customer's other
// endpoints subscribed to `webhook_disabled` are told (the disabled one no longer receives anything).
import type { AuditTrail } from '../audit/trail.ts';
import { maskUrl } from '../audit/redact.ts';
import type { WebhookEventKind } from '../contract/webhooks.ts';
import type { Logger } from '../domain.ts';
import type { WebhookRow } from '../store/repos/webhooks.ts';

export interface DisabledDeps {
  log: Logger;
  audit: Pick<AuditTrail, 'record'> | undefined;
  emit(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>): Promise<void>;
}

export async function announceDisabled(row: WebhookRow, deps: DisabledDeps): Promise<void> {
  const url = maskUrl(row.url);
  deps.log.warn({ webhook: row.id.slice(0, 8), reason: row.disabled_reason, failures: row.consecutive_failures }, 'webhook endpoint disabled after failing');
  await deps.audit?.record(row.customer_id, { role: 'server' }, {
    action: 'webhook.disable',
    target: { type: 'webhook', id: row.id },
    before: { url, events: row.events, enabled: true },
    after: { url, events: row.events, enabled: false, disabled_reason: row.disabled_reason, failing_since: row.failing_since, consecutive_failures: row.consecutive_failures },
  });
  await deps.emit(row.customer_id, 'webhook_disabled', {
    webhook_id: row.id,
    url,
    reason: row.disabled_reason,
    failing_since: row.failing_since,
    consecutive_failures: row.consecutive_failures,
    disabled_at: row.disabled_at,
  });
}
