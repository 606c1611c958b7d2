// Usage history: traffic buckets per session, node and minute, rolled up into hours and days as they
// age (server/usage/history.ts writes and compacts them; routes/usage.ts reads them). Reads are one
// SQL text for both databases. Each write is one statement on PostgreSQL, safe across instances (adds
// to one row all count; compacting instances take different rows), and one transaction on SQLite.
import { all, dialect, get, run, tx, Where, type Op } from '../sql/op.ts';

export type UsageStep = 'minute' | 'hour' | 'day';
export const USAGE_STEP_MS: Record<UsageStep, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Bytes one session moved through one node within one minute (start: epoch ms, minute-aligned). */
export interface UsageAdd {
  session_id: string;
  node: string;
  start: number;
  uploaded_bytes: number;
  downloaded_bytes: number;
}

/** A read of the history: rows of `steps` (none coarser than `stepMs`) in [from, to), summed per `stepMs`. */
export interface UsageQuery {
  customer_id: string;
  client_id?: string;
  session_id?: string;
  zone?: string;
  node?: string;
  from: number;
  to: number;
  stepMs: number;
  steps: UsageStep[];
}

export type UsageSum = Pick<UsageAdd, 'uploaded_bytes' | 'downloaded_bytes'>;

const COLUMNS = 'step, start, session_id, node, customer_id, client_id, zone, uploaded_bytes, downloaded_bytes';
/** A bucket that exists already takes the new bytes on top (the target is qualified for PostgreSQL). */
const ADD_ON_CONFLICT = `ON CONFLICT (session_id, step, start, node) DO UPDATE SET
  uploaded_bytes = usage_buckets.uploaded_bytes + excluded.uploaded_bytes,
  downloaded_bytes = usage_buckets.downloaded_bytes + excluded.downloaded_bytes`;

function usageWhere(q: UsageQuery): Where {
  return new Where()
    .and('customer_id = ?', q.customer_id)
    .in('step', q.steps)
    .and('start >= ?', q.from)
    .and('start < ?', q.to)
    .equal(q, ['client_id', 'session_id', 'zone', 'node']);
}

/** SQLite: one compiled statement per entry, all in one transaction. */
const addEach = tx(function* (adds: UsageAdd[]): Op<void> {
  for (const a of adds) {
    yield* run(
      `INSERT INTO usage_buckets (${COLUMNS})
       SELECT 'minute', ?, s.id, ?, s.customer_id, s.client_id, s.zone, ?, ? FROM sessions s WHERE s.id = ?
       ${ADD_ON_CONFLICT}`,
      a.start, a.node, a.uploaded_bytes, a.downloaded_bytes, a.session_id,
    );
  }
});

/**
 * Adds each entry to its minute bucket (created at 0 when missing), all or none. The session's
 * customer, client and zone are copied from its row; an unknown session adds nothing.
 */
function* addUsage(adds: UsageAdd[]): Op<void> {
  if (adds.length === 0) return;
  if ((yield* dialect()) === 'sqlite') return yield* addEach(adds);
  // One statement; entries of one bucket are summed first (a row may be updated once per statement).
  yield* run(
    `INSERT INTO usage_buckets (${COLUMNS})
     SELECT 'minute', a.start, s.id, a.node, s.customer_id, s.client_id, s.zone, SUM(a.up), SUM(a.down)
     FROM jsonb_to_recordset(CAST(? AS jsonb)) AS a(session_id text, node text, start bigint, up bigint, down bigint)
     JOIN sessions s ON s.id = a.session_id
     GROUP BY a.start, s.id, a.node, s.customer_id, s.client_id, s.zone
     ${ADD_ON_CONFLICT}`,
    JSON.stringify(adds.map((a) => ({ session_id: a.session_id, node: a.node, start: a.start, up: a.uploaded_bytes, down: a.downloaded_bytes }))),
  );
}

/** The history summed per q.stepMs bucket (only buckets with rows; `start` is epoch ms), oldest first. */
function* usageBuckets(q: UsageQuery): Op<({ start: number } & UsageSum)[]> {
  const { where, args } = usageWhere(q);
  return yield* all<{ start: number } & UsageSum>(
    `SELECT (start / CAST(? AS BIGINT)) * CAST(? AS BIGINT) AS start, SUM(uploaded_bytes) AS uploaded_bytes, SUM(downloaded_bytes) AS downloaded_bytes
     FROM usage_buckets WHERE ${where} GROUP BY 1 ORDER BY 1`,
    q.stepMs, q.stepMs, ...args,
  );
}

/** The clients that moved the most bytes (both directions) in the range, at most `limit`. */
function* usageTopClients(q: UsageQuery, limit: number): Op<({ client_id: string } & UsageSum)[]> {
  const { where, args } = usageWhere(q);
  return yield* all<{ client_id: string } & UsageSum>(
    `SELECT client_id, SUM(uploaded_bytes) AS uploaded_bytes, SUM(downloaded_bytes) AS downloaded_bytes
     FROM usage_buckets WHERE ${where} GROUP BY client_id ORDER BY SUM(uploaded_bytes) + SUM(downloaded_bytes) DESC, client_id LIMIT ?`,
    ...args, limit,
  );
}

/** Adds the rows of `source` to the buckets of a coarser step (parameters: the step, its length twice). */
const rollupFrom = (source: string) => `INSERT INTO usage_buckets (${COLUMNS})
  SELECT CAST(? AS TEXT), (start / CAST(? AS BIGINT)) * CAST(? AS BIGINT), session_id, node, customer_id, client_id, zone, SUM(uploaded_bytes), SUM(downloaded_bytes)
  FROM ${source} GROUP BY 2, session_id, node, customer_id, client_id, zone
  ${ADD_ON_CONFLICT}`;

/** SQLite: the chosen rowids, their sums added to the coarser buckets, then the rows deleted. */
const rollupRowids = tx(function* (from: UsageStep, to: UsageStep, olderThan: number, limit: number): Op<number> {
  const ids = (yield* all<{ r: number }>('SELECT rowid AS r FROM usage_buckets WHERE step = ? AND start < ? ORDER BY start LIMIT ?', from, olderThan, limit)).map((x) => x.r);
  if (ids.length === 0) return 0;
  const list = JSON.stringify(ids);
  yield* run(rollupFrom('usage_buckets WHERE rowid IN (SELECT value FROM json_each(?))'), to, USAGE_STEP_MS[to], USAGE_STEP_MS[to], list);
  yield* run('DELETE FROM usage_buckets WHERE rowid IN (SELECT value FROM json_each(?))', list);
  return ids.length;
});

/**
 * Moves at most `limit` of the oldest `from` rows starting before `olderThan` into `to` buckets, all
 * or none; returns how many. Any subset may move at a time: the sums stay the same.
 */
function* rollupUsage(from: UsageStep, to: UsageStep, olderThan: number, limit: number): Op<number> {
  if ((yield* dialect()) === 'sqlite') return yield* rollupRowids(from, to, olderThan, limit);
  // One statement: the rows are deleted and their sums added together.
  const r = yield* get<{ n: number }>(
    `WITH moved AS (
       DELETE FROM usage_buckets WHERE ctid IN (
         SELECT ctid FROM usage_buckets WHERE step = ? AND start < ? ORDER BY start LIMIT ? FOR UPDATE SKIP LOCKED
       ) RETURNING *
     ), added AS (${rollupFrom('moved')} RETURNING 1)
     SELECT (SELECT COUNT(*) FROM moved) AS n, (SELECT COUNT(*) FROM added) AS _added`,
    from, olderThan, limit, to, USAGE_STEP_MS[to], USAGE_STEP_MS[to],
  );
  return r!.n;
}

/** Deletes at most `limit` of the oldest `step` rows starting before `olderThan`; returns how many. */
function* pruneUsage(step: UsageStep, olderThan: number, limit: number): Op<number> {
  // The rows' own address; PostgreSQL skips rows another instance is deleting.
  const [key, skip] = (yield* dialect()) === 'sqlite' ? ['rowid', ''] : ['ctid', ' FOR UPDATE SKIP LOCKED'];
  return yield* run(`DELETE FROM usage_buckets WHERE ${key} IN (SELECT ${key} FROM usage_buckets WHERE step = ? AND start < ? ORDER BY start LIMIT ?${skip})`, step, olderThan, limit);
}

/** How many history rows there are of each step (tests and diagnostics: the table stays bounded). */
function* usageRowCounts(): Op<Record<UsageStep, number>> {
  const out: Record<UsageStep, number> = { minute: 0, hour: 0, day: 0 };
  for (const r of yield* all<{ step: UsageStep; n: number }>('SELECT step, COUNT(*) AS n FROM usage_buckets GROUP BY step')) out[r.step] = r.n;
  return out;
}

export const usageOps = { addUsage, usageBuckets, usageTopClients, rollupUsage, pruneUsage, usageRowCounts };
