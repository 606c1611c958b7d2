// SQL of webhooks on SQLite: the endpoints, and the durable outbox of their deliveries
// (migration 5 in db.ts; the same tables on PostgreSQL in pg/webhooks.ts). The outbox is filled
// in two ways, each one transaction: the session events are copied from the event log after a
// cursor (fanOut: the events are already persisted, so a crash between the event and its
// delivery loses nothing; the cursor moves in the same transaction as the inserts, so nothing is
// queued twice), and the other kinds (pause, resume, limits, caps) are queued by enqueue().
// A delivery is taken with a lease (claimDue), so one sender at a time holds it; a sender that
// dies leaves a lease that runs out, and the row is sent again with the same id.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { randomUUID } from 'node:crypto';
import { preparedStatements } from './db.ts';
import { afterFailure, type DisableRule, NOT_SENT_DISABLED, trimSql } from './webhook-health.ts';

/** An endpoint as stored: the secret only encrypted (server/webhooks/secret.ts). */
export interface WebhookRow {
  id: string;
  customer_id: string;
  url: string;
  events: string[];
  enabled: boolean;
  secret_enc: string;
  secret_prefix: string;
  created_at: string;
  updated_at: string;
  /** Failed attempts in a row (0 after a success), and since when (ISO; null while healthy). */
  consecutive_failures: number;
  failing_since: string | null;
  /** Why and when the server disabled the endpoint (null when it did not). */
  disabled_reason: string | null;
  disabled_at: string | null;
  /** Pending deliveries dropped, oldest first, because the endpoint had too many waiting. */
  dropped: number;
}

export interface DeliveryRow {
  seq: number;
  id: string;
  webhook_id: string;
  customer_id: string;
  event_type: string;
  order_key: string;
  body: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

/** A claimed delivery with what sending it needs. */
export interface DueDelivery extends DeliveryRow {
  url: string;
  secret_enc: string;
}

/** A session event as the log holds it (fanOut's input). */
export interface LoggedEvent {
  id: number;
  customer_id: string;
  session_id: string;
  event_type: string;
  created_at: string;
  duration: number;
  downloaded_bytes: number;
  uploaded_bytes: number;
}

/** What one event queues for one endpoint: its kind, its order key and its body (given the delivery id). */
export interface QueuedEvent {
  customerId: string;
  kind: string;
  orderKey: string;
  createdAt: string;
  body: (deliveryId: string) => string;
}

export type DeliveryOutcome =
  | { kind: 'delivered'; statusCode: number; at: string }
  | { kind: 'retry'; statusCode: number | null; error: string; nextAttemptAt: number }
  | { kind: 'failed'; statusCode: number | null; error: string };

export interface WebhookPatch {
  url?: string;
  events?: string[];
  enabled?: boolean;
}

/** The operations both databases offer, Promise-returning (the service and the sender use only these). */
export interface WebhookStore {
  create(row: WebhookRow): Promise<void>;
  list(customerId: string): Promise<WebhookRow[]>;
  get(customerId: string, id: string): Promise<WebhookRow | undefined>;
  update(customerId: string, id: string, patch: WebhookPatch, now: string): Promise<WebhookRow | undefined>;
  delete(customerId: string, id: string): Promise<boolean>;
  count(customerId: string): Promise<number>;
  /**
   * Queues one event for every enabled endpoint of its customer subscribed to its kind; an
   * endpoint with more than `maxPending` pending deliveries loses its oldest (counted in `dropped`).
   */
  enqueue(event: QueuedEvent, now: number, maxPending: number): Promise<number>;
  /** Copies up to `limit` logged events after the cursor into the outbox (as enqueue); returns how many events it read. */
  fanOut(toQueued: (e: LoggedEvent) => QueuedEvent, limit: number, now: number, maxPending: number): Promise<number>;
  /** An attempt to the endpoint succeeded: its failure count starts again. */
  recordSuccess(webhookId: string): Promise<void>;
  /**
   * An attempt to the endpoint failed: counted; when `rule` says so the endpoint is disabled and
   * its pending deliveries marked failed. Returns the endpoint when this failure disabled it.
   */
  recordFailure(webhookId: string, now: Date, rule: DisableRule): Promise<WebhookRow | undefined>;
  /** Leases up to `limit` due deliveries, at most one per (endpoint, order key), oldest first. */
  claimDue(now: number, leaseMs: number, limit: number): Promise<DueDelivery[]>;
  complete(seq: number, outcome: DeliveryOutcome): Promise<void>;
  deliveries(customerId: string, webhookId: string, limit: number): Promise<DeliveryRow[]>;
  /** Drops every lease (SQLite at start: one process per folder, so no lease can be live). */
  releaseLeases(): Promise<void>;
  /** Deletes up to `limit` finished (delivered or failed) deliveries created before `beforeIso`; returns how many. */
  prune(beforeIso: string, limit: number): Promise<number>;
}

export const DELIVERY_COLUMNS =
  'd.seq, d.id, d.webhook_id, d.customer_id, d.event_type, d.order_key, d.body, d.status, d.attempts, d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.delivered_at';
/** The columns a new endpoint is inserted with (the health columns start at their defaults). */
export const WEBHOOK_INSERT_COLUMNS = 'id, customer_id, url, events, enabled, secret_enc, secret_prefix, created_at, updated_at';
export const WEBHOOK_COLUMNS = `${WEBHOOK_INSERT_COLUMNS}, consecutive_failures, failing_since, disabled_reason, disabled_at, dropped`;

type RawWebhook = Omit<WebhookRow, 'events' | 'enabled'> & { events: string; enabled: number | boolean };
export function toWebhook(r: RawWebhook): WebhookRow {
  return {
    ...r,
    events: JSON.parse(r.events) as string[],
    enabled: r.enabled === 1 || r.enabled === true,
    consecutive_failures: Number(r.consecutive_failures),
    dropped: Number(r.dropped),
  };
}

/** The columns an update writes: enabling an endpoint again clears what the server recorded of its failures. */
export function updatedRow(cur: WebhookRow, patch: WebhookPatch, now: string): WebhookRow {
  const next = { ...cur, ...patch, updated_at: now };
  if (patch.enabled === true && !cur.enabled) Object.assign(next, { consecutive_failures: 0, failing_since: null, disabled_reason: null, disabled_at: null });
  return next;
}
export function toDelivery<T extends DeliveryRow>(r: T): T {
  return {
    ...r,
    seq: Number(r.seq),
    attempts: Number(r.attempts),
    next_attempt_at: Number(r.next_attempt_at),
    last_status_code: r.last_status_code === null ? null : Number(r.last_status_code),
  };
}

/** The "at most one in flight per (endpoint, order key)" rule, shared by both databases. */
export const FIRST_IN_ORDER = `NOT EXISTS (SELECT 1 FROM webhook_deliveries e
  WHERE e.webhook_id = d.webhook_id AND e.order_key = d.order_key AND e.status = 'pending' AND e.seq < d.seq)`;

export class SqliteWebhookStore implements WebhookStore {
  private readonly db: DatabaseSync;
  private readonly q: (sql: string) => StatementSync;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.q = preparedStatements(db);
  }

  private tx<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  async create(row: WebhookRow): Promise<void> {
    this.q(`INSERT INTO webhooks (${WEBHOOK_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      row.id, row.customer_id, row.url, JSON.stringify(row.events), row.enabled ? 1 : 0, row.secret_enc, row.secret_prefix, row.created_at, row.updated_at,
    );
  }

  async list(customerId: string): Promise<WebhookRow[]> {
    return (this.q(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE customer_id = ? ORDER BY created_at, id`).all(customerId) as unknown as RawWebhook[]).map(toWebhook);
  }

  async get(customerId: string, id: string): Promise<WebhookRow | undefined> {
    const r = this.q(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE customer_id = ? AND id = ?`).get(customerId, id) as RawWebhook | undefined;
    return r && toWebhook(r);
  }

  async update(customerId: string, id: string, patch: WebhookPatch, now: string): Promise<WebhookRow | undefined> {
    const cur = await this.get(customerId, id);
    if (!cur) return undefined;
    const next = updatedRow(cur, patch, now);
    this.q(
      'UPDATE webhooks SET url = ?, events = ?, enabled = ?, updated_at = ?, consecutive_failures = ?, failing_since = ?, disabled_reason = ?, disabled_at = ? WHERE customer_id = ? AND id = ?',
    ).run(next.url, JSON.stringify(next.events), next.enabled ? 1 : 0, now, next.consecutive_failures, next.failing_since, next.disabled_reason, next.disabled_at, customerId, id);
    return next;
  }

  async delete(customerId: string, id: string): Promise<boolean> {
    return this.q('DELETE FROM webhooks WHERE customer_id = ? AND id = ?').run(customerId, id).changes > 0;
  }

  async count(customerId: string): Promise<number> {
    return (this.q('SELECT COUNT(*) AS n FROM webhooks WHERE customer_id = ?').get(customerId) as { n: number }).n;
  }

  private insertFor(event: QueuedEvent, now: number, maxPending: number): number {
    const hooks = (this.q(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE customer_id = ? AND enabled = 1 AND created_at <= ?`).all(
      event.customerId, event.createdAt,
    ) as unknown as RawWebhook[]).map(toWebhook);
    let n = 0;
    for (const h of hooks) {
      if (!h.events.includes(event.kind)) continue;
      const id = randomUUID();
      this.q(
        `INSERT INTO webhook_deliveries (id, webhook_id, customer_id, event_type, order_key, body, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(id, h.id, event.customerId, event.kind, event.orderKey, event.body(id), now, event.createdAt);
      const dropped = Number(this.q(trimSql(() => '?')).run(h.id, h.id, maxPending).changes);
      if (dropped > 0) this.q('UPDATE webhooks SET dropped = dropped + ? WHERE id = ?').run(dropped, h.id);
      n++;
    }
    return n;
  }

  async enqueue(event: QueuedEvent, now: number, maxPending: number): Promise<number> {
    return this.tx(() => this.insertFor(event, now, maxPending));
  }

  async fanOut(toQueued: (e: LoggedEvent) => QueuedEvent, limit: number, now: number, maxPending: number): Promise<number> {
    // A plain read first: an idle pass takes no write lock (the relay's counters share the file).
    const behind = this.q('SELECT 1 AS x FROM events WHERE id > (SELECT last_event_id FROM webhook_cursor WHERE id = 1) LIMIT 1').get();
    if (!behind) return 0;
    return this.tx(() => {
      const cursor = (this.q('SELECT last_event_id AS id FROM webhook_cursor WHERE id = 1').get() as { id: number }).id;
      const events = this.q(
        'SELECT id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes FROM events WHERE id > ? ORDER BY id LIMIT ?',
      ).all(cursor, limit) as unknown as LoggedEvent[];
      if (!events.length) return 0;
      for (const e of events) this.insertFor(toQueued(e), now, maxPending);
      this.q('UPDATE webhook_cursor SET last_event_id = ? WHERE id = 1').run(events[events.length - 1]!.id);
      return events.length;
    });
  }

  async claimDue(now: number, leaseMs: number, limit: number): Promise<DueDelivery[]> {
    return this.tx(() => {
      const rows = this.q(
        `SELECT ${DELIVERY_COLUMNS}, w.url, w.secret_enc FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
         WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?) AND ${FIRST_IN_ORDER}
         ORDER BY d.seq LIMIT ?`,
      ).all(now, now, limit) as unknown as DueDelivery[];
      for (const r of rows) this.q('UPDATE webhook_deliveries SET lease_until = ? WHERE seq = ?').run(now + leaseMs, r.seq);
      return rows.map(toDelivery);
    });
  }

  async complete(seq: number, o: DeliveryOutcome): Promise<void> {
    if (o.kind === 'delivered') {
      this.q(
        `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status_code = ?, last_error = NULL, lease_until = NULL, delivered_at = ? WHERE seq = ?`,
      ).run(o.statusCode, o.at, seq);
    } else if (o.kind === 'retry') {
      this.q(
        'UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = ?, last_error = ?, lease_until = NULL, next_attempt_at = ? WHERE seq = ?',
      ).run(o.statusCode, o.error, o.nextAttemptAt, seq);
    } else {
      this.q(
        `UPDATE webhook_deliveries SET status = 'failed', attempts = attempts + 1, last_status_code = ?, last_error = ?, lease_until = NULL WHERE seq = ?`,
      ).run(o.statusCode, o.error, seq);
    }
  }

  async recordSuccess(webhookId: string): Promise<void> {
    this.q('UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL WHERE id = ? AND consecutive_failures > 0').run(webhookId);
  }

  async recordFailure(webhookId: string, now: Date, rule: DisableRule): Promise<WebhookRow | undefined> {
    return this.tx(() => {
      const raw = this.q(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ? AND enabled = 1`).get(webhookId) as RawWebhook | undefined;
      if (!raw) return undefined;
      const h = afterFailure(toWebhook(raw), now, rule);
      const at = h.disabledReason ? now.toISOString() : null;
      this.q('UPDATE webhooks SET consecutive_failures = ?, failing_since = ?, enabled = ?, disabled_reason = ?, disabled_at = ? WHERE id = ?').run(
        h.consecutive_failures, h.failing_since, h.disabledReason ? 0 : 1, h.disabledReason, at, webhookId,
      );
      if (!h.disabledReason) return undefined;
      this.q(`UPDATE webhook_deliveries SET status = 'failed', last_error = ?, lease_until = NULL WHERE webhook_id = ? AND status = 'pending'`).run(NOT_SENT_DISABLED, webhookId);
      return { ...toWebhook(raw), consecutive_failures: h.consecutive_failures, failing_since: h.failing_since, enabled: false, disabled_reason: h.disabledReason, disabled_at: at };
    });
  }

  async deliveries(customerId: string, webhookId: string, limit: number): Promise<DeliveryRow[]> {
    return (this.q(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.customer_id = ? AND d.webhook_id = ? ORDER BY d.seq DESC LIMIT ?`).all(
      customerId, webhookId, limit,
    ) as unknown as DeliveryRow[]).map(toDelivery);
  }

  async releaseLeases(): Promise<void> {
    this.q('UPDATE webhook_deliveries SET lease_until = NULL WHERE lease_until IS NOT NULL').run();
  }

  async prune(beforeIso: string, limit: number): Promise<number> {
    return Number(
      this.q(`DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ? LIMIT ?)`).run(beforeIso, limit).changes,
    );
  }
}
