// SQL of webhooks on PostgreSQL: the same operations as SqliteWebhookStore (../webhooks.ts), for
// several `serve` processes sharing one database. Exactly one sender takes each delivery:
// claimDue locks the due rows with FOR UPDATE SKIP LOCKED and writes its lease in the same
// statement, so another instance skips them now and sees the lease afterwards. fanOut locks the
// one cursor row, so two instances never copy the same events into the outbox.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import {
  DELIVERY_COLUMNS,
  type DeliveryOutcome,
  type DeliveryRow,
  type DueDelivery,
  FIRST_IN_ORDER,
  type LoggedEvent,
  type QueuedEvent,
  toDelivery,
  toWebhook,
  updatedRow,
  WEBHOOK_COLUMNS,
  WEBHOOK_INSERT_COLUMNS,
  type WebhookPatch,
  type WebhookRow,
  type WebhookStore,
} from '../webhooks.ts';
import { afterFailure, type DisableRule, NOT_SENT_DISABLED, trimSql } from '../webhook-health.ts';
import { mapDatabaseError } from './pool.ts';

type Queryable = Pick<pg.Pool, 'query'>;

export class PgWebhookStore implements WebhookStore {
  private readonly pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  private async rows<R extends object>(sql: string, args: unknown[] = [], db: Queryable = this.pool): Promise<R[]> {
    try {
      return (await db.query<R>(sql, args)).rows;
    } catch (err) {
      return mapDatabaseError(err);
    }
  }

  private async tx<T>(fn: (db: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch(mapDatabaseError);
    let broken = false;
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      return mapDatabaseError(err);
    } finally {
      client.release(broken);
    }
  }

  async create(row: WebhookRow): Promise<void> {
    await this.rows(`INSERT INTO webhooks (${WEBHOOK_INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
      row.id, row.customer_id, row.url, JSON.stringify(row.events), row.enabled, row.secret_enc, row.secret_prefix, row.created_at, row.updated_at,
    ]);
  }

  async list(customerId: string): Promise<WebhookRow[]> {
    return (await this.rows<never>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE customer_id = $1 ORDER BY created_at, id`, [customerId])).map(toWebhook);
  }

  async get(customerId: string, id: string): Promise<WebhookRow | undefined> {
    const r = (await this.rows<never>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE customer_id = $1 AND id = $2`, [customerId, id]))[0];
    return r && toWebhook(r);
  }

  async update(customerId: string, id: string, patch: WebhookPatch, now: string): Promise<WebhookRow | undefined> {
    return this.tx(async (db) => {
      const r = (await this.rows<never>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE customer_id = $1 AND id = $2 FOR UPDATE`, [customerId, id], db))[0];
      if (!r) return undefined;
      const next = updatedRow(toWebhook(r), patch, now);
      await this.rows(
        `UPDATE webhooks SET url = $3, events = $4, enabled = $5, updated_at = $6, consecutive_failures = $7, failing_since = $8, disabled_reason = $9, disabled_at = $10
         WHERE customer_id = $1 AND id = $2`,
        [customerId, id, next.url, JSON.stringify(next.events), next.enabled, now, next.consecutive_failures, next.failing_since, next.disabled_reason, next.disabled_at],
        db,
      );
      return next;
    });
  }

  async delete(customerId: string, id: string): Promise<boolean> {
    return (await this.rows<{ id: string }>('DELETE FROM webhooks WHERE customer_id = $1 AND id = $2 RETURNING id', [customerId, id])).length > 0;
  }

  async count(customerId: string): Promise<number> {
    return Number((await this.rows<{ n: string }>('SELECT COUNT(*) AS n FROM webhooks WHERE customer_id = $1', [customerId]))[0]!.n);
  }

  private async insertFor(db: Queryable, event: QueuedEvent, now: number, maxPending: number): Promise<number> {
    const hooks = (
      await this.rows<never>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE customer_id = $1 AND enabled AND created_at <= $2`, [event.customerId, event.createdAt], db)
    ).map(toWebhook);
    let n = 0;
    for (const h of hooks) {
      if (!h.events.includes(event.kind)) continue;
      const id = randomUUID();
      await this.rows(
        `INSERT INTO webhook_deliveries (id, webhook_id, customer_id, event_type, order_key, body, next_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [id, h.id, event.customerId, event.kind, event.orderKey, event.body(id), now, event.createdAt],
        db,
      );
      const dropped = (await this.rows<{ seq: string }>(`${trimSql((i) => `$${i}`)} RETURNING seq`, [h.id, h.id, maxPending], db)).length;
      if (dropped > 0) await this.rows('UPDATE webhooks SET dropped = dropped + $2 WHERE id = $1', [h.id, dropped], db);
      n++;
    }
    return n;
  }

  async enqueue(event: QueuedEvent, now: number, maxPending: number): Promise<number> {
    return this.tx(async (db) => {
      // The cursor row's lock serialises every insert into the outbox, cluster-wide, so a
      // delivery's seq order is its commit order: a sender never sends seq N+1 and then sees N
      // appear behind it (the order per session would break).
      await this.rows('SELECT 1 FROM webhook_cursor WHERE id = 1 FOR UPDATE', [], db);
      return this.insertFor(db, event, now, maxPending);
    });
  }

  async fanOut(toQueued: (e: LoggedEvent) => QueuedEvent, limit: number, now: number, maxPending: number): Promise<number> {
    return this.tx(async (db) => {
      // SKIP LOCKED: while another instance copies, this one has nothing to do.
      const cur = (await this.rows<{ id: string }>('SELECT last_event_id AS id FROM webhook_cursor WHERE id = 1 FOR UPDATE SKIP LOCKED', [], db))[0];
      if (!cur) return 0;
      const events = (
        await this.rows<LoggedEvent>(
          `SELECT id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes FROM events WHERE id > $1 ORDER BY id LIMIT $2`,
          [cur.id, limit],
          db,
        )
      ).map((e) => ({ ...e, id: Number(e.id), duration: Number(e.duration), downloaded_bytes: Number(e.downloaded_bytes), uploaded_bytes: Number(e.uploaded_bytes) }));
      if (!events.length) return 0;
      for (const e of events) await this.insertFor(db, toQueued(e), now, maxPending);
      await this.rows('UPDATE webhook_cursor SET last_event_id = $1 WHERE id = 1', [events[events.length - 1]!.id], db);
      return events.length;
    });
  }

  async claimDue(now: number, leaseMs: number, limit: number): Promise<DueDelivery[]> {
    const rows = await this.rows<DueDelivery>(
      `WITH due AS (
         SELECT d.seq FROM webhook_deliveries d
         WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until < $1) AND ${FIRST_IN_ORDER}
         ORDER BY d.seq LIMIT $3 FOR UPDATE SKIP LOCKED)
       UPDATE webhook_deliveries d SET lease_until = $2 FROM due, webhooks w
       WHERE d.seq = due.seq AND w.id = d.webhook_id
       RETURNING ${DELIVERY_COLUMNS}, w.url, w.secret_enc`,
      [now, now + leaseMs, limit],
    );
    return rows.map(toDelivery).sort((a, b) => a.seq - b.seq);
  }

  async complete(seq: number, o: DeliveryOutcome): Promise<void> {
    if (o.kind === 'delivered') {
      await this.rows(
        `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status_code = $2, last_error = NULL, lease_until = NULL, delivered_at = $3 WHERE seq = $1`,
        [seq, o.statusCode, o.at],
      );
    } else if (o.kind === 'retry') {
      await this.rows(
        'UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = $2, last_error = $3, lease_until = NULL, next_attempt_at = $4 WHERE seq = $1',
        [seq, o.statusCode, o.error, o.nextAttemptAt],
      );
    } else {
      await this.rows(
        `UPDATE webhook_deliveries SET status = 'failed', attempts = attempts + 1, last_status_code = $2, last_error = $3, lease_until = NULL WHERE seq = $1`,
        [seq, o.statusCode, o.error],
      );
    }
  }

  async recordSuccess(webhookId: string): Promise<void> {
    await this.rows('UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL WHERE id = $1 AND consecutive_failures > 0', [webhookId]);
  }

  async recordFailure(webhookId: string, now: Date, rule: DisableRule): Promise<WebhookRow | undefined> {
    return this.tx(async (db) => {
      // The row's lock: two instances failing at once count both failures, and only one disables.
      const r = (await this.rows<never>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1 AND enabled FOR UPDATE`, [webhookId], db))[0];
      if (!r) return undefined;
      const cur = toWebhook(r);
      const h = afterFailure(cur, now, rule);
      const at = h.disabledReason ? now.toISOString() : null;
      await this.rows('UPDATE webhooks SET consecutive_failures = $2, failing_since = $3, enabled = $4, disabled_reason = $5, disabled_at = $6 WHERE id = $1', [
        webhookId, h.consecutive_failures, h.failing_since, !h.disabledReason, h.disabledReason, at,
      ], db);
      if (!h.disabledReason) return undefined;
      await this.rows(`UPDATE webhook_deliveries SET status = 'failed', last_error = $2, lease_until = NULL WHERE webhook_id = $1 AND status = 'pending'`, [webhookId, NOT_SENT_DISABLED], db);
      return { ...cur, consecutive_failures: h.consecutive_failures, failing_since: h.failing_since, enabled: false, disabled_reason: h.disabledReason, disabled_at: at };
    });
  }

  async deliveries(customerId: string, webhookId: string, limit: number): Promise<DeliveryRow[]> {
    return (
      await this.rows<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.customer_id = $1 AND d.webhook_id = $2 ORDER BY d.seq DESC LIMIT $3`,
        [customerId, webhookId, limit],
      )
    ).map(toDelivery);
  }

  async releaseLeases(): Promise<void> {
    // Other instances may hold live leases: on PostgreSQL leases only run out.
  }

  async prune(beforeIso: string, limit: number): Promise<number> {
    return (
      await this.rows<{ seq: string }>(
        `DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE status <> 'pending' AND created_at < $1 LIMIT $2) RETURNING seq`,
        [beforeIso, limit],
      )
    ).length;
  }
}
