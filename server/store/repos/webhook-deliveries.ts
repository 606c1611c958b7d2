// The durable outbox of webhook deliveries, for both databases. Each fill is one transaction:
// fanOut copies session events logged after a cursor (already persisted, so a crash loses nothing;
// the cursor moves with the inserts, so nothing is queued twice); enqueue() queues the other kinds
// (pause, resume, limits, caps). Every insert holds the cursor row (PostgreSQL: its row lock,
// cluster-wide; SQLite: the single writer), so seq order is commit order: a sender never sends
// seq N+1 and then sees N appear behind it. claimDue leases deliveries, at most one in flight per
// (endpoint, order key); a dead sender's lease runs out and the row is resent with the same id.
import { randomUUID } from 'node:crypto';
import type { EventInsert } from '../../domain.ts';
import { all, dialect, get, marks, run, tx, type Op } from '../sql/op.ts';
import { EVENT_COLUMNS } from './events.ts';

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

/** A session event as the log holds it (fanOut's input): the row as inserted, with its id. */
export type LoggedEvent = EventInsert & { id: number };

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

/** The error of the pending deliveries of an endpoint the server disabled. */
export const NOT_SENT_DISABLED = 'not sent: the endpoint was disabled after failing';

/** A SELECT's row lock in tx(): `FOR UPDATE ...` on PostgreSQL; none on SQLite (BEGIN IMMEDIATE: one writer). */
export function* rowLock(clause = 'FOR UPDATE'): Op<string> {
  return (yield* dialect()) === 'postgres' ? ` ${clause}` : '';
}

const COLUMNS =
  'd.seq, d.id, d.webhook_id, d.customer_id, d.event_type, d.order_key, d.body, d.status, d.attempts, d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.delivered_at';

/** At most one in flight per (endpoint, order key): no older pending delivery of the same key. */
const FIRST_IN_ORDER = `NOT EXISTS (SELECT 1 FROM webhook_deliveries e
  WHERE e.webhook_id = d.webhook_id AND e.order_key = d.order_key AND e.status = 'pending' AND e.seq < d.seq)`;

/** Drops the oldest pending deliveries of an endpoint beyond the newest `cap` (endpoint, endpoint, cap). */
const TRIM = `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending' AND seq <= (
  SELECT seq FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending' ORDER BY seq DESC LIMIT 1 OFFSET ?)`;

/** Queues the event for every enabled endpoint of its customer subscribed to its kind (made before it). */
function* insertFor(event: QueuedEvent, now: number, maxPending: number): Op<number> {
  const hooks = yield* all<{ id: string; events: string }>(
    'SELECT id, events FROM webhooks WHERE customer_id = ? AND enabled = ? AND created_at <= ? ORDER BY created_at, id',
    event.customerId,
    true,
    event.createdAt,
  );
  const subscribed = hooks.filter((h) => (JSON.parse(h.events) as string[]).includes(event.kind));
  for (const h of subscribed) {
    const id = randomUUID();
    yield* run(
      `INSERT INTO webhook_deliveries (id, webhook_id, customer_id, event_type, order_key, body, next_attempt_at, created_at) VALUES (${marks(8)})`,
      id, h.id, event.customerId, event.kind, event.orderKey, event.body(id), now, event.createdAt,
    );
    const dropped = yield* run(TRIM, h.id, h.id, maxPending);
    if (dropped > 0) yield* run('UPDATE webhooks SET dropped = dropped + ? WHERE id = ?', dropped, h.id);
  }
  return subscribed.length;
}

/** Holds the cursor row until the commit: inserts into the outbox one transaction at a time. */
function* holdCursor(clause = 'FOR UPDATE'): Op<number | undefined> {
  const cur = yield* get<{ id: number }>(`SELECT last_event_id AS id FROM webhook_cursor WHERE id = 1${yield* rowLock(clause)}`);
  return cur?.id;
}

/** Queues one event (insertFor). An endpoint keeps the newest `maxPending` pending; `dropped` counts the rest. */
const enqueue = tx(function* (event: QueuedEvent, now: number, maxPending: number): Op<number> {
  yield* holdCursor();
  return yield* insertFor(event, now, maxPending);
});

const copyEvents = tx(function* (toQueued: (e: LoggedEvent) => QueuedEvent, limit: number, now: number, maxPending: number): Op<number> {
  // SKIP LOCKED: while another instance copies (or queues), this one has nothing to do.
  const cursor = yield* holdCursor('FOR UPDATE SKIP LOCKED');
  if (cursor === undefined) return 0;
  const events = yield* all<LoggedEvent>(`SELECT ${EVENT_COLUMNS}, customer_id FROM events WHERE id > ? ORDER BY id LIMIT ?`, cursor, limit);
  if (!events.length) return 0;
  for (const e of events) yield* insertFor(toQueued(e), now, maxPending);
  yield* run('UPDATE webhook_cursor SET last_event_id = ? WHERE id = 1', events[events.length - 1]!.id);
  return events.length;
});

/** Copies up to `limit` logged events after the cursor into the outbox (as enqueue); returns how many events it read. */
function* fanOut(toQueued: (e: LoggedEvent) => QueuedEvent, limit: number, now: number, maxPending: number): Op<number> {
  // A plain read first: an idle pass opens no transaction (on SQLite, takes no write lock).
  const behind = yield* get('SELECT 1 AS x FROM events WHERE id > (SELECT last_event_id FROM webhook_cursor WHERE id = 1) LIMIT 1');
  if (!behind) return 0;
  return yield* copyEvents(toQueued, limit, now, maxPending);
}

/** Leases up to `limit` due deliveries, at most one per (endpoint, order key), oldest first. */
const claimDue = tx(function* (now: number, leaseMs: number, limit: number): Op<DueDelivery[]> {
  // PostgreSQL: the due rows are locked (others skip them now) and leased before the commit
  // (others see the lease afterwards), so exactly one sender takes each.
  const rows = yield* all<DueDelivery>(
    `SELECT ${COLUMNS}, w.url, w.secret_enc FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?) AND ${FIRST_IN_ORDER}
     ORDER BY d.seq LIMIT ?${yield* rowLock('FOR UPDATE OF d SKIP LOCKED')}`,
    now,
    now,
    limit,
  );
  if (rows.length) yield* run(`UPDATE webhook_deliveries SET lease_until = ? WHERE seq IN (${marks(rows.length)})`, now + leaseMs, ...rows.map((r) => r.seq));
  return rows;
});

/** Records an attempt's outcome and gives the lease back. */
function* complete(seq: number, o: DeliveryOutcome): Op<void> {
  const counted = 'attempts = attempts + 1, last_status_code = ?, lease_until = NULL';
  if (o.kind === 'delivered') {
    yield* run(`UPDATE webhook_deliveries SET status = 'delivered', ${counted}, last_error = NULL, delivered_at = ? WHERE seq = ?`, o.statusCode, o.at, seq);
  } else if (o.kind === 'retry') {
    yield* run(`UPDATE webhook_deliveries SET ${counted}, last_error = ?, next_attempt_at = ? WHERE seq = ?`, o.statusCode, o.error, o.nextAttemptAt, seq);
  } else {
    yield* run(`UPDATE webhook_deliveries SET status = 'failed', ${counted}, last_error = ? WHERE seq = ?`, o.statusCode, o.error, seq);
  }
}

/** The newest `limit` deliveries of an endpoint, newest first. */
const deliveries = (customerId: string, webhookId: string, limit: number) =>
  all<DeliveryRow>(`SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.customer_id = ? AND d.webhook_id = ? ORDER BY d.seq DESC LIMIT ?`, customerId, webhookId, limit);

/** Drops all leases at start on SQLite (one process per folder); PostgreSQL's may be live: they only run out. */
function* releaseLeases(): Op<void> {
  if ((yield* dialect()) === 'postgres') return;
  yield* run('UPDATE webhook_deliveries SET lease_until = NULL WHERE lease_until IS NOT NULL');
}

/** Deletes up to `limit` finished (delivered or failed) deliveries created before `beforeIso`; returns how many. */
const prune = (beforeIso: string, limit: number) => run(
  `DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ? LIMIT ?)`,
  beforeIso,
  limit,
);

/** The pending deliveries of an endpoint the server disabled: failed, not sent. */
export const failPending = (webhookId: string) =>
  run(`UPDATE webhook_deliveries SET status = 'failed', last_error = ?, lease_until = NULL WHERE webhook_id = ? AND status = 'pending'`, NOT_SENT_DISABLED, webhookId);

export const deliveryOps = { enqueue, fanOut, claimDue, complete, deliveries, releaseLeases, prune };
