// Webhook endpoints and their health, for both databases (their outbox: webhook-deliveries.ts).
// The secret is stored only encrypted (server/webhooks/secret.ts). An endpoint that keeps failing is
// disabled (enabled = false, disabled_reason set) and its pending deliveries marked failed, so a dead
// endpoint's backlog neither grows nor holds a sender; PATCH enabled: true starts a new count. The row
// is locked while read and written (PostgreSQL: two instances failing at once count both; one disables).
import type { Webhook } from '../../contract/webhooks.ts';
import type { AsyncOps } from '../sql/op.ts';
import { allAs, assignments, bool, changedAny, getAs, run, scalar, tx, type Op } from '../sql/op.ts';
import { deliveryOps, failPending, rowLock } from './webhook-deliveries.ts';

export type { DeliveryOutcome, DeliveryRow, DueDelivery, LoggedEvent, QueuedEvent } from './webhook-deliveries.ts';
export { NOT_SENT_DISABLED } from './webhook-deliveries.ts';

/**
 * An endpoint as stored: the API record (fields in contract/webhooks.ts), its customer and encrypted
 * secret. `last_error` is readable by the owner; `next_retry_at` is epoch ms, read only (READ_COLUMNS).
 */
export type WebhookRow = Omit<Webhook, 'events' | 'next_retry_at'> & {
  customer_id: string;
  events: string[];
  secret_enc: string;
  next_retry_at: number | null;
};

export type WebhookPatch = Partial<Pick<WebhookRow, 'url' | 'events' | 'enabled'>>;

/** When an endpoint is disabled: after `maxFailures` failed attempts in a row, or after failing for `maxFailingMs`. */
export interface DisableRule {
  maxFailures: number;
  maxFailingMs: number;
}

export type Health = Pick<WebhookRow, 'consecutive_failures' | 'failing_since'>;

/** One more failed attempt: the new counters, and the reason to disable the endpoint, if any. */
export function afterFailure(h: Health, now: Date, rule: DisableRule): Health & { disabledReason: string | null } {
  const n = h.consecutive_failures + 1;
  const since = h.failing_since ?? now.toISOString();
  const failingMs = now.getTime() - Date.parse(since);
  let disabledReason: string | null = null;
  if (n >= rule.maxFailures) disabledReason = `${n} delivery attempts failed in a row`;
  else if (failingMs >= rule.maxFailingMs) disabledReason = `deliveries failed for ${duration(failingMs)} without a success`;
  return { consecutive_failures: n, failing_since: since, disabledReason };
}

function duration(ms: number): string {
  if (ms >= 3_600_000) return `${Math.floor(ms / 3_600_000)} h`;
  if (ms >= 60_000) return `${Math.floor(ms / 60_000)} min`;
  return `${Math.floor(ms / 1000)} s`;
}

/** The columns a new endpoint is inserted with (the health columns start at their defaults). */
const INSERT_COLUMNS = 'id, customer_id, url, events, enabled, secret_enc, secret_prefix, created_at, updated_at';
const COLUMNS = `${INSERT_COLUMNS}, consecutive_failures, failing_since, disabled_reason, disabled_at, dropped, last_error, last_error_at`;
/** What reads show besides the row: the earliest retry due among its pending deliveries tried before. */
const READ_COLUMNS = `${COLUMNS}, (SELECT MIN(d.next_attempt_at) FROM webhook_deliveries d
  WHERE d.webhook_id = webhooks.id AND d.status = 'pending' AND d.attempts > 0) AS next_retry_at`;

type RawWebhook = Omit<WebhookRow, 'events' | 'enabled' | 'next_retry_at'> & { events: string; enabled: unknown; next_retry_at?: number | null };

function toWebhook(r: RawWebhook): WebhookRow {
  return {
    ...r,
    events: JSON.parse(r.events) as string[],
    enabled: bool(r.enabled),
    next_retry_at: r.next_retry_at ?? null,
  };
}

function* create(row: WebhookRow): Op<void> {
  yield* run(
    `INSERT INTO webhooks (${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    row.id, row.customer_id, row.url, JSON.stringify(row.events), row.enabled, row.secret_enc, row.secret_prefix, row.created_at, row.updated_at,
  );
}

/** A customer's endpoints, oldest first. */
const list = (customerId: string) => allAs(toWebhook, `SELECT ${READ_COLUMNS} FROM webhooks WHERE customer_id = ? ORDER BY created_at, id`, customerId);

const getWebhook = (customerId: string, id: string) =>
  getAs(toWebhook, `SELECT ${READ_COLUMNS} FROM webhooks WHERE customer_id = ? AND id = ?`, customerId, id);

/** Applies a patch; enabling an endpoint again clears what the server recorded of its failures. */
const update = tx(function* (customerId: string, id: string, patch: WebhookPatch, now: string): Op<WebhookRow | undefined> {
  const cur = yield* getAs(toWebhook, `SELECT ${COLUMNS} FROM webhooks WHERE customer_id = ? AND id = ?${yield* rowLock()}`, customerId, id);
  if (!cur) return undefined;
  const next = { ...cur, ...patch, updated_at: now };
  if (patch.enabled === true && !cur.enabled) Object.assign(next, { consecutive_failures: 0, failing_since: null, disabled_reason: null, disabled_at: null });
  yield* save(next);
  return next;
});

/** What a patch or an attempt changes of an endpoint. */
const SAVED = ['url', 'events', 'enabled', 'updated_at', 'consecutive_failures', 'failing_since', 'disabled_reason', 'disabled_at', 'last_error', 'last_error_at'] as const;

/** Writes an endpoint's SAVED columns (its row read and locked before). */
function* save(r: WebhookRow): Op<void> {
  const { sets, args } = assignments({ ...r, events: JSON.stringify(r.events) }, SAVED);
  yield* run(`UPDATE webhooks SET ${sets.join(', ')} WHERE id = ?`, ...args, r.id);
}

const deleteWebhook = (customerId: string, id: string) => changedAny(run('DELETE FROM webhooks WHERE customer_id = ? AND id = ?', customerId, id));

const count = (customerId: string) => scalar('SELECT COUNT(*) AS n FROM webhooks WHERE customer_id = ?', customerId);

/** An attempt to the endpoint succeeded: its failure count starts again. */
function* recordSuccess(webhookId: string): Op<void> {
  yield* run('UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL WHERE id = ? AND consecutive_failures > 0', webhookId);
}

/**
 * A failed attempt: counted and `error` kept as the last error; per `rule` it may disable the endpoint
 * and fail its pending deliveries. Returns the endpoint only when this failure disabled it.
 */
const recordFailure = tx(function* (webhookId: string, now: Date, rule: DisableRule, error: string): Op<WebhookRow | undefined> {
  const cur = yield* getAs(toWebhook, `SELECT ${COLUMNS} FROM webhooks WHERE id = ? AND enabled = ?${yield* rowLock()}`, webhookId, true);
  if (!cur) return undefined;
  const { disabledReason, ...h } = afterFailure(cur, now, rule);
  const at = now.toISOString();
  const next = { ...cur, ...h, enabled: !disabledReason, disabled_reason: disabledReason, disabled_at: disabledReason ? at : null, last_error: error, last_error_at: at };
  yield* save(next);
  if (!disabledReason) return undefined;
  yield* failPending(webhookId);
  return next;
});

/** Every webhook operation: endpoints, health and the outbox. */
export const webhookOps = { create, list, get: getWebhook, update, delete: deleteWebhook, count, recordSuccess, recordFailure, ...deliveryOps };

/** What the webhook service and its sender use, on either database. */
export type WebhookStore = AsyncOps<typeof webhookOps>;
