// Cluster limits held by the store: nodes' byte grants (the arithmetic is server/store/grants.ts)
// and claims of a session's first connection (central max_sessions). Both run under the
// customer's lock, so the grants and claims of every instance are ordered.
import { allocate, CLAIM_WINDOW_MS, limitsLockKey, releaseRow, type Grant, type GrantRequest, type GrantRow } from '../grants.ts';
import { all, get, lock, run, runNotifying, tx, type Notice, type Op } from '../sql/op.ts';
import { CHANNELS } from '../sql/channels.ts';
import { sessionOps } from './sessions.ts';

const GRANT_COLUMNS = 'node_id, used_up, used_down, granted_up, granted_down, gen';
const SAVE_GRANT = `INSERT INTO node_grants (customer_id, client_id, ${GRANT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (customer_id, client_id, node_id) DO UPDATE SET granted_up = excluded.granted_up, granted_down = excluded.granted_down, gen = excluded.gen`;

/**
 * A release's bytes may go to other nodes at once (a node whose last grant was final refuses connections
 * until its next state): every instance's node channels send theirs now. Its own channel: no limit changed.
 */
const RELEASED: Notice = { channel: CHANNELS.grants, expr: 'customer_id' };

/** Writes what a node is granted (under the customer's lock: its used bytes are as read). */
function* saveGrant(customerId: string, clientId: string, r: GrantRow, notice?: Notice): Op<void> {
  const params = [customerId, clientId, r.node_id, r.used_up, r.used_down, r.granted_up, r.granted_down, r.gen];
  yield* notice ? runNotifying(notice, SAVE_GRANT, ...params) : run(SAVE_GRANT, ...params);
}

/**
 * Tops up a node's byte grant for a customer (clientId '') or one client; returns what it may still move.
 * Rows are read before the totals, so a report applied in between makes less available, never more.
 */
const grantBytes = tx(function* (nodeId: string, customerId: string, clientId: string, req: GrantRequest): Op<Grant> {
  yield* lock(limitsLockKey(customerId));
  const rows = yield* all<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM node_grants WHERE customer_id = ? AND client_id = ?`, customerId, clientId);
  const sums = yield* sessionOps.sumCounters(customerId, clientId === '' ? undefined : clientId);
  const { row, grant } = allocate(rows, nodeId, { up: sums.uploaded_bytes, down: sums.downloaded_bytes }, req);
  yield* saveGrant(customerId, clientId, row);
  return grant;
});

/**
 * A node gives back what it holds of a grant beyond KEEP_IDLE (grants.ts releaseRow), when the
 * row is still of generation `gen` (the node's reports before it are applied: the channel
 * handles a node's messages in order). Returns whether it was released.
 */
const releaseGrant = tx(function* (nodeId: string, customerId: string, clientId: string, gen: number): Op<boolean> {
  yield* lock(limitsLockKey(customerId));
  const found = yield* get<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM node_grants WHERE customer_id = ? AND client_id = ? AND node_id = ?`, customerId, clientId, nodeId);
  if (!found || found.gen !== gen) return false;
  yield* saveGrant(customerId, clientId, releaseRow(found), RELEASED);
  return true;
});

/**
 * A node asks to open the first connection of a session whose client has max_sessions: granted
 * when fewer than `max` other sessions of the client are active (on this node: those it says
 * are; elsewhere: active in the store, or claimed within CLAIM_WINDOW_MS), and then recorded as
 * claimed, in one transaction, so two nodes asking at once cannot both take the last place.
 */
const claimSession = tx(function* (nodeId: string, sessionId: string, localActive: string[], max: number): Op<boolean> {
  const s = yield* get<{ customer_id: string; client_id: string }>('SELECT customer_id, client_id FROM sessions WHERE id = ?', sessionId);
  if (!s) return false;
  yield* lock(limitsLockKey(s.customer_id));
  const others = yield* all<{ id: string; status: string; claimed_at: number | null; node_id: string | null }>(
    `SELECT s.id, s.status, s.claimed_at, p.node_id FROM sessions s LEFT JOIN session_placements p ON p.session_id = s.id
     WHERE s.customer_id = ? AND s.client_id = ? AND s.id <> ? AND s.status <> 'ended'`,
    s.customer_id,
    s.client_id,
    sessionId,
  );
  const mine = new Set(localActive);
  const since = Date.now() - CLAIM_WINDOW_MS;
  const active = others.filter((o) => (o.node_id === nodeId ? mine.has(o.id) : o.status === 'active' || (o.claimed_at ?? 0) > since)).length;
  if (active >= max) return false;
  yield* run('UPDATE sessions SET claimed_at = ? WHERE id = ?', Date.now(), sessionId);
  return true;
});

export const grantOps = { grantBytes, releaseGrant, claimSession };
