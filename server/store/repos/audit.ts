// The audit trail (server/audit/trail.ts): every change made through the API or the command
// line, who made it (token id and role, never the token), what, and the values before and
// after as JSON. One SQL text for both databases; ids are the table's own (newest highest).
import type { AuditPage } from '../../contract/audit.ts';
import { all, marks, run, scalar, Where, type Op, type Param } from '../sql/op.ts';

export interface AuditInsert {
  customer_id: string;
  created_at: string;
  /** The API token's id (never the token); null for the command line and the server itself. */
  actor_token_id: string | null;
  actor_role: 'owner' | 'agent' | 'cli' | 'server';
  action: string;
  target_type: string;
  target_id: string;
  session_id: string | null;
  client_id: string | null;
  before: unknown;
  after: unknown;
}

/** An entry as the API shows it (contract/audit.ts). */
export type AuditEntry = AuditPage['entries'][number];

export interface AuditFilter {
  session_id?: string;
  client_id?: string;
  action?: string;
  /** Only these actions (the agent's view: server/audit/redact.ts). */
  actions?: readonly string[];
  actor_token_id?: string;
  /** ISO times: from inclusive, to exclusive. */
  from?: string;
  to?: string;
}

/** An audit_log row: the values as JSON text. */
type RawAudit = Omit<AuditInsert, 'before' | 'after'> & { id: number; before_json: string | null; after_json: string | null };

const parseJson = (t: string | null): unknown => (t === null ? null : JSON.parse(t));

export function toAuditEntry(r: RawAudit): AuditEntry {
  return {
    id: r.id,
    created_at: r.created_at,
    actor: { token_id: r.actor_token_id, role: r.actor_role },
    action: r.action,
    target: { type: r.target_type, id: r.target_id },
    session_id: r.session_id,
    client_id: r.client_id,
    before: parseJson(r.before_json),
    after: parseJson(r.after_json),
  };
}

/**
 * A session's entries are found by its `seq` (audit_by_session_seq), not by its id: the id is random (a
 * UUID, the VLESS credential), so an index on it took every creation's entry to a random page of the
 * index, and each commit wrote one such page per creation; a new session's seq is the highest yet, so
 * its entries are appended. Sessions are never deleted: every session_id of an entry has its seq.
 */
const SEQ_OF = '(SELECT seq FROM sessions WHERE id = ?)';

export function auditWhere(customerId: string, f: AuditFilter, beforeId?: number): Where {
  return new Where()
    .and('customer_id = ?', customerId)
    .and(`session_seq = ${SEQ_OF}`, f.session_id)
    .equal(f, ['client_id', 'action', 'actor_token_id'])
    .in('action', f.actions)
    .and('created_at >= ?', f.from)
    .and('created_at < ?', f.to)
    .and('id < ?', beforeId);
}

/** A change's columns (reads add its id, the insert its customer). */
const AUDIT_FIELDS = 'created_at, actor_token_id, actor_role, action, target_type, target_id, session_id, client_id, before_json, after_json';
const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

/** An entry's columns as written, in order (without its session's seq). */
export const AUDIT_COLUMNS = `customer_id, ${AUDIT_FIELDS}`;
/** The INSERT of changes, given their seq (placements.ts joins it); INSERT_AUDIT: one change, its seq looked up by id. */
export const AUDIT_INTO = `INSERT INTO audit_log (${AUDIT_COLUMNS}, session_seq)`;
const INSERT_AUDIT = `${AUDIT_INTO} VALUES (${marks(11)}, ${SEQ_OF})`;
/** A change's 11 values in AUDIT_COLUMNS order (INSERT_AUDIT then takes the session's id once more). */
export const insertAuditValues = (a: AuditInsert): Param[] =>
  [a.customer_id, a.created_at, a.actor_token_id, a.actor_role, a.action, a.target_type, a.target_id, a.session_id, a.client_id, json(a.before), json(a.after)];

const RECORD_AUDIT = `${INSERT_AUDIT} RETURNING id`;

/** Records one change; returns its id. */
const recordAudit = (a: AuditInsert) => scalar(RECORD_AUDIT, ...insertAuditValues(a), a.session_id);

/** Newest first; `beforeId` pages on (the id of the last entry of the previous page). */
function* auditEntries(customerId: string, filter: AuditFilter, limit: number, beforeId?: number): Op<{ rows: AuditEntry[]; nextId: number | null }> {
  const { where, args } = auditWhere(customerId, filter, beforeId);
  const raw = yield* all<RawAudit>(`SELECT id, ${AUDIT_FIELDS} FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT ?`, ...args, limit + 1);
  const rows = raw.slice(0, limit).map(toAuditEntry);
  return { rows, nextId: raw.length > limit ? rows[rows.length - 1].id : null };
}

/** Deletes at most `limit` of the oldest entries older than the cutoff; returns how many. */
const pruneAuditBatch = (olderThanIso: string, limit: number) =>
  run('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < ? ORDER BY id LIMIT ?)', olderThanIso, limit);

export const auditOps = { recordAudit, auditEntries, pruneAuditBatch };
