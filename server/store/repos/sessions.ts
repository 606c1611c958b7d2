// Sessions: their rows, paging, pause flag and the counters the data planes save.
import type { RuntimePatch, SessionRow } from '../../domain.ts';
import { CHANNELS } from '../sql/channels.ts';
import { all, assignments, bool, get, getAs, getCached, run, runNotifying, Where, type Op, type Param } from '../sql/op.ts';

export type SessionFilter = Partial<Pick<SessionRow, 'client_id' | 'status' | 'zone'>>;

export const SESSION_COLUMNS =
  'seq, id, customer_id, client_id, zone, reusable, paused, status, uploaded_bytes, downloaded_bytes, duration, connections, created_at, expires_at';

/** The columns of a sessions row under the alias `s` (for joins). */
export const SESSION_COLUMNS_S = SESSION_COLUMNS.split(', ').map((c) => `s.${c}`).join(', ');

/** A sessions row as either database returns it: flags as 0/1 or booleans, plus the paging key. */
export type RawSession = Omit<SessionRow, 'reusable' | 'paused'> & { reusable: unknown; paused: unknown; seq: number };

export function toSessionRow({ seq: _seq, ...r }: RawSession): SessionRow {
  return { ...r, reusable: bool(r.reusable), paused: bool(r.paused) };
}

/** A session to insert: the row's given fields (the rest start at their defaults). */
export type NewSession = Pick<SessionRow, 'id' | 'customer_id' | 'client_id' | 'zone' | 'reusable' | 'created_at'> & { expires_at?: string | null };

/** The INSERT of a new session (no RETURNING), and its values in order. */
const INSERT_SESSION = `INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, created_at, expires_at)
     VALUES (?, ?, ?, ?, 'vless', ?, ?, ?)`;
export const insertSessionValues = (s: NewSession): Param[] => [s.id, s.customer_id, s.client_id, s.zone, s.reusable, s.created_at, s.expires_at ?? null];

function* insertSession(s: NewSession): Op<SessionRow> {
  const r = yield* get<RawSession>(`${INSERT_SESSION} RETURNING ${SESSION_COLUMNS}`, ...insertSessionValues(s));
  return toSessionRow(r!);
}

/**
 * Ends the sessions whose expires_at has passed and that no connection carries (created or
 * idle; an active one is ended by the data plane carrying it, which cuts its connections and
 * publishes session_end). Idempotent, safe from several processes. Returns how many.
 */
const expireIdleSessions = (nowIso: string) =>
  run(`UPDATE sessions SET status = 'ended' WHERE expires_at IS NOT NULL AND expires_at <= ? AND status IN ('created', 'idle')`, nowIso);

const getSession = (id: string) => getAs(toSessionRow, `SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ?`, id);

const SESSION_OF = `SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ? AND customer_id = ?`;

/** The session only when it belongs to this customer: another customer's id is "not found". */
function* getSessionOf(customerId: string, id: string): Op<SessionRow | undefined> {
  const r = yield* getCached<RawSession>(SESSION_OF, id, customerId);
  return r && toSessionRow(r);
}

/** Newest first; `beforeSeq` is the opaque seq of the last row of the previous page. */
function* listSessions(customerId: string, filter: SessionFilter, limit: number, beforeSeq?: number): Op<{ rows: SessionRow[]; nextSeq: number | null }> {
  const { where, args } = new Where().and('customer_id = ?', customerId).equal(filter, ['client_id', 'status', 'zone']).and('seq < ?', beforeSeq);
  const raw = yield* all<RawSession>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${where} ORDER BY seq DESC LIMIT ?`, ...args, limit + 1);
  const page = raw.slice(0, limit);
  return { rows: page.map(toSessionRow), nextSeq: raw.length > limit ? page[page.length - 1].seq : null };
}

/** Also tells every instance (and through them the node carrying the session) at once. */
function* setPaused(id: string, paused: boolean): Op<void> {
  yield* runNotifying({ channel: CHANNELS.sessions, expr: 'id' }, 'UPDATE sessions SET paused = ? WHERE id = ?', paused, id);
}

const RUNTIME_KEYS = ['status', 'uploaded_bytes', 'downloaded_bytes', 'duration', 'connections'] as const;

/** Sets the runtime fields named (at most 31 column sets: the statement cache stays small). */
function* saveRuntime(id: string, patch: RuntimePatch): Op<void> {
  const { sets, args } = assignments(patch, RUNTIME_KEYS);
  if (sets.length) yield* run(`UPDATE sessions SET ${sets.join(', ')} WHERE id = ?`, ...args, id);
}

/** A customer's (or one client's) lifetime totals. */
function* sumCounters(customerId: string, clientId?: string): Op<{ uploaded_bytes: number; downloaded_bytes: number }> {
  const { where, args } = new Where().and('customer_id = ?', customerId).and('client_id = ?', clientId);
  const sums = 'COALESCE(SUM(uploaded_bytes), 0) AS uploaded_bytes, COALESCE(SUM(downloaded_bytes), 0) AS downloaded_bytes';
  return (yield* get<{ uploaded_bytes: number; downloaded_bytes: number }>(`SELECT ${sums} FROM sessions WHERE ${where}`, ...args))!;
}

export const sessionOps = { insertSession, expireIdleSessions, getSession, getSessionOf, listSessions, setPaused, saveRuntime, sumCounters };
