// What one API request needs, read in one statement (one round trip on PostgreSQL; one cached
// read on SQLite): a session's status read (the session, its client's record, the customer's
// limits) and a session creation's checks (the client's record, the customer's limits).
import type { ClientControl, SessionRow } from '../../domain.ts';
import { getCached, type Op } from '../sql/op.ts';
import { CLIENT_COLUMNS, toClientControl, toClientRow, type ClientRow, type RawClient } from './clients.ts';
import { scopeFields, toAllLimits, type AllLimits } from './limits.ts';
import { SESSION_COLUMNS, SESSION_COLUMNS_S, toSessionRow, type RawSession } from './sessions.ts';

const CLIENT_KEYS = CLIENT_COLUMNS.split(', ');
const SESSION_KEYS = SESSION_COLUMNS.split(', ');
/** The clients row's columns under the alias `c`, each named `c_<column>` (sessions share some names). */
const CLIENT_C = CLIENT_KEYS.map((k) => `c.${k} AS c_${k}`).join(', ');

type Row = Record<string, unknown>;

// The texts are made once: a read's text is also the read cache's key, hashed on every look-up.
const STATUS_OF = `SELECT ${SESSION_COLUMNS_S}, ${CLIENT_C}, ${scopeFields('s.customer_id')}
  FROM sessions s LEFT JOIN clients c ON c.customer_id = s.customer_id AND c.client_id = s.client_id
  WHERE s.id = ? AND s.customer_id = ?`;
const CLIENT_AND_LIMITS = `SELECT ${CLIENT_C}, ${scopeFields('?')} FROM (SELECT 1 AS one) k LEFT JOIN clients c ON c.customer_id = ? AND c.client_id = ?`;

/** The client's record in a joined row; undefined when the client has none (the LEFT JOIN found nothing). */
function clientOf(r: Row): ClientRow | undefined {
  if (r.c_client_id == null) return undefined;
  return toClientRow(Object.fromEntries(CLIENT_KEYS.map((k) => [k, r[`c_${k}`]])) as RawClient);
}

/** The session's record, its client's control (undefined: nothing set) and the customer's limits. */
export interface SessionStatusRead {
  row: SessionRow;
  control: ClientControl | undefined;
  limits: AllLimits;
}

/** A status read's inputs; undefined when the session is not this customer's (another customer's id is "not found"). */
function* getSessionStatusOf(customerId: string, id: string): Op<SessionStatusRead | undefined> {
  const r = yield* getCached<Row>(STATUS_OF, id, customerId);
  if (!r) return undefined;
  const client = clientOf(r);
  const session = Object.fromEntries(SESSION_KEYS.map((k) => [k, r[k]])) as RawSession;
  return { row: toSessionRow(session), control: client && toClientControl(client), limits: toAllLimits(r) };
}

/** What a session creation checks before its insert: the client's record (undefined: none) and the customer's limits. */
function* getClientAndLimits(customerId: string, clientId: string): Op<{ client: ClientRow | undefined; limits: AllLimits }> {
  const r = (yield* getCached<Row>(
    CLIENT_AND_LIMITS,
    customerId,
    customerId,
    customerId,
    customerId,
    clientId,
  ))!;
  return { client: clientOf(r), limits: toAllLimits(r) };
}

export const requestReadOps = { getSessionStatusOf, getClientAndLimits };
