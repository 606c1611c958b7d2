// The event log. Readers poll `id > last`, so an id below one already seen must never appear later:
// - SQLite: AUTOINCREMENT; one writer at a time makes ids visible in order.
// - PostgreSQL: with a sequence, 8 may commit before 7 and a reader skips 7. So each insert takes its
//   ids by updating the single event_counter row in the same statement; the row lock is held until
//   the transaction ends (released only once it is visible, so the waiter's commit cannot overtake),
//   and the next writer anywhere in the cluster waits: ids are handed out and visible strictly in
//   order (a rolled-back id is reused). Cost: event inserts are serialised cluster-wide for one short
//   statement (a batch under one hold). The statement's pg_notify wakes the readers on commit.
import type { EventInsert } from '../../domain.ts';
import type { SessionEvent } from '../../contract/schemas.ts';
import { CHANNELS } from '../sql/channels.ts';
import { all, allAs, dialect, get, scalar, Where, type Op } from '../sql/op.ts';

export interface EventFilter {
  sessionIds?: string[];
  types?: string[];
}

export const EVENT_COLUMNS = 'id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes';

/** The event's own fields (PostgreSQL's insert returns its customer and a count besides; they come last). */
type Inserted = SessionEvent & { customer_id: string; _woke: number };
const toEvent = ({ customer_id: _c, _woke: _w, ...e }: Inserted): SessionEvent => e;

const PG_INSERT = `WITH c AS (
    UPDATE event_counter SET last_id = last_id + ? RETURNING last_id - ? AS base
  ), ins AS (
    INSERT INTO events (id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes)
    SELECT c.base + b.ord, b.customer_id, b.session_id, b.event_type, b.created_at, b.duration, b.downloaded_bytes, b.uploaded_bytes
    FROM c, jsonb_to_recordset(CAST(? AS jsonb))
      AS b(ord bigint, customer_id text, session_id text, event_type text, created_at text, duration bigint, downloaded_bytes bigint, uploaded_bytes bigint)
    RETURNING ${EVENT_COLUMNS}, customer_id
  ), woke AS (
    SELECT pg_notify('${CHANNELS.events}', customer_id || ':' || MAX(id)) FROM ins GROUP BY customer_id
  )
  SELECT ins.*, (SELECT COUNT(*) FROM woke) AS _woke FROM ins ORDER BY id`;

const SQLITE_INSERT = `INSERT INTO events (customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes)
  VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${EVENT_COLUMNS}`;

/** Stores a batch; ids are consecutive on PostgreSQL and increasing on SQLite, in the order given. */
export function* insertEvents(batch: EventInsert[]): Op<SessionEvent[]> {
  if (batch.length === 0) return [];
  if ((yield* dialect()) === 'postgres') {
    return yield* allAs(toEvent, PG_INSERT, batch.length, batch.length, JSON.stringify(batch.map((e, i) => ({ ...e, ord: i + 1 }))));
  }
  const out: SessionEvent[] = [];
  for (const e of batch) out.push((yield* get<SessionEvent>(SQLITE_INSERT, e.customer_id, e.session_id, e.event_type, e.created_at, e.duration, e.downloaded_bytes, e.uploaded_bytes))!);
  return out;
}

function* insertEvent(e: EventInsert): Op<SessionEvent> {
  return (yield* insertEvents([e]))[0];
}

/** An empty list of the filter is no filter. */
const given = (list: string[] | undefined) => (list?.length ? list : undefined);

function eventWhere(customerId: string, filter: EventFilter): Where {
  return new Where().and('customer_id = ?', customerId).in('session_id', given(filter.sessionIds)).in('event_type', given(filter.types));
}

/** Stored events of a customer with id > afterId, oldest first, at most `limit`. */
function* eventsAfter(customerId: string, afterId: number, filter: EventFilter, limit: number): Op<SessionEvent[]> {
  const { where, args } = eventWhere(customerId, filter);
  return yield* all<SessionEvent>(`SELECT ${EVENT_COLUMNS} FROM events WHERE ${where} AND id > ? ORDER BY id LIMIT ?`, ...args, afterId, limit);
}

/** The id after which exactly the `count` newest matching events follow (0 when there are fewer). */
function* idBeforeNewest(customerId: string, filter: EventFilter, count: number): Op<number> {
  const { where, args } = eventWhere(customerId, filter);
  const r = yield* get<{ id: number }>(`SELECT id FROM events WHERE ${where} ORDER BY id DESC LIMIT 1 OFFSET ?`, ...args, count);
  return r?.id ?? 0;
}

/**
 * The newest committed event id of the whole log (0 when empty): where a live-only stream
 * starts. On PostgreSQL an insert still in flight holds the next id uncommitted, so it is delivered.
 */
const lastEventId = () => scalar({ postgres: 'SELECT last_id AS id FROM event_counter', sqlite: 'SELECT COALESCE(MAX(id), 0) AS id FROM events' });

export const eventOps = { insertEvent, insertEvents, eventsAfter, idBeforeNewest, lastEventId };
