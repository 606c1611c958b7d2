// Clients as records: what the owner set for one client_id of a customer (disabled, expiry, an
// override of the client limits template, the last usage reset), and what its sessions add up
// to. A row exists only once something was set; a client is also every client_id its sessions
// name. Every change announces itself on the limits channel (`<customer>:client`), so each
// instance's data plane re-reads the client like a changed limits record.
import { randomUUID } from 'node:crypto';
import type { ClientControl, LimitValues } from '../../domain.ts';
import { isoNow } from '../../time.ts';
import { CHANNELS } from '../sql/channels.ts';
import { all, bool, get, getCached, lock, run, runNotifying, tx, type Op } from '../sql/op.ts';

/** A clients row as the service reads it. */
export interface ClientRow {
  client_id: string;
  disabled: boolean;
  expires_at: string | null;
  /** The override record (null: none set). */
  override: { id: string; created_at: string; updated_at: string; fields: LimitValues } | null;
  /** The last usage reset: when, and the client's lifetime totals then. */
  reset: { at: string; up: number; down: number } | null;
}

/** What the client's sessions add up to (clients without sessions have none). */
export interface ClientSessions {
  client_id: string;
  /** Sessions not ended. */
  live: number;
  /** Sessions with an open connection (status active). */
  active: number;
  /** Sessions not ended and paused. */
  paused: number;
  up: number;
  down: number;
  /** When its last traffic in the usage history ended (epoch ms: the end of its newest bucket), or null. */
  last_traffic: number | null;
}

const NOTICE = { channel: CHANNELS.limits, expr: "customer_id || ':client'" };
const COLUMNS = 'client_id, disabled, expires_at, limits_id, limits, limits_created_at, limits_updated_at, reset_at, reset_up, reset_down';

type Raw = Record<'client_id' | 'expires_at' | 'limits_id' | 'limits' | 'limits_created_at' | 'limits_updated_at' | 'reset_at', string | null> & { disabled: unknown; reset_up: number | null; reset_down: number | null };

function toClientRow(r: Raw): ClientRow {
  return {
    client_id: r.client_id!,
    disabled: bool(r.disabled),
    expires_at: r.expires_at,
    override: r.limits_id && r.limits ? { id: r.limits_id, created_at: r.limits_created_at!, updated_at: r.limits_updated_at!, fields: JSON.parse(r.limits) as LimitValues } : null,
    reset: r.reset_at ? { at: r.reset_at, up: r.reset_up ?? 0, down: r.reset_down ?? 0 } : null,
  };
}

const CLIENT_OF = `SELECT ${COLUMNS} FROM clients WHERE customer_id = ? AND client_id = ?`;

function* getClient(customerId: string, clientId: string): Op<ClientRow | undefined> {
  const r = yield* getCached<Raw>(CLIENT_OF, customerId, clientId);
  return r ? toClientRow(r) : undefined;
}

function* listClientRows(customerId: string): Op<ClientRow[]> {
  return (yield* all<Raw>(`SELECT ${COLUMNS} FROM clients WHERE customer_id = ? ORDER BY client_id`, customerId)).map(toClientRow);
}

/** The client's record as a data plane enforces it (undefined: nothing set, the template alone). */
function* getClientControl(customerId: string, clientId: string): Op<ClientControl | undefined> {
  const row = yield* getClient(customerId, clientId);
  if (!row) return undefined;
  return {
    disabled: row.disabled,
    expires_at: row.expires_at,
    limits: row.override?.fields ?? {},
    reset: row.reset ? { at: Date.parse(row.reset.at), up: row.reset.up, down: row.reset.down } : null,
  };
}

/** Makes the row if there is none (nothing set: enabled, no expiry, no override). */
function* ensureRow(customerId: string, clientId: string, now: string): Op<void> {
  yield* lock(`client:${customerId}:${clientId}`);
  yield* run(
    `INSERT INTO clients (customer_id, client_id, disabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (customer_id, client_id) DO NOTHING`,
    customerId, clientId, false, now, now,
  );
}

/** Sets disabled and/or expires_at (undefined: unchanged; expires_at null: none). */
const patchClient = tx(function* (customerId: string, clientId: string, patch: { disabled?: boolean; expires_at?: string | null }): Op<ClientRow> {
  const now = isoNow();
  yield* ensureRow(customerId, clientId, now);
  if (patch.disabled !== undefined) yield* run('UPDATE clients SET disabled = ? WHERE customer_id = ? AND client_id = ?', patch.disabled, customerId, clientId);
  if (patch.expires_at !== undefined) yield* run('UPDATE clients SET expires_at = ? WHERE customer_id = ? AND client_id = ?', patch.expires_at, customerId, clientId);
  yield* runNotifying(NOTICE, 'UPDATE clients SET updated_at = ? WHERE customer_id = ? AND client_id = ?', now, customerId, clientId);
  return (yield* getClient(customerId, clientId))!;
});

/** Merges `patch` into the client's override (null removes a field), creating it on first use; serialised per client. */
const patchClientLimits = tx(function* (customerId: string, clientId: string, patch: Record<string, number | string | null>): Op<ClientRow> {
  const now = isoNow();
  yield* ensureRow(customerId, clientId, now);
  const current = (yield* getClient(customerId, clientId))!;
  const fields: Record<string, unknown> = { ...(current.override?.fields ?? {}) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete fields[k];
    else fields[k] = v;
  }
  const id = current.override?.id ?? randomUUID();
  const created = current.override?.created_at ?? now;
  yield* runNotifying(
    NOTICE,
    'UPDATE clients SET limits_id = ?, limits = ?, limits_created_at = ?, limits_updated_at = ?, updated_at = ? WHERE customer_id = ? AND client_id = ?',
    id, JSON.stringify(fields), created, now, now, customerId, clientId,
  );
  return (yield* getClient(customerId, clientId))!;
});

/** Removes the client's override; false when it had none. */
function* deleteClientLimits(customerId: string, clientId: string): Op<boolean> {
  const sql = 'UPDATE clients SET limits_id = NULL, limits = NULL, limits_created_at = NULL, limits_updated_at = NULL, updated_at = ? WHERE customer_id = ? AND client_id = ? AND limits_id IS NOT NULL';
  return (yield* runNotifying(NOTICE, sql, isoNow(), customerId, clientId)) > 0;
}

/** Records a usage reset now: the client's stored lifetime totals become where its caps count from. */
const resetClientUsage = tx(function* (customerId: string, clientId: string): Op<ClientRow> {
  const now = isoNow();
  yield* ensureRow(customerId, clientId, now);
  const sums = yield* get<{ u: number; d: number }>(
    'SELECT COALESCE(SUM(uploaded_bytes), 0) AS u, COALESCE(SUM(downloaded_bytes), 0) AS d FROM sessions WHERE customer_id = ? AND client_id = ?',
    customerId, clientId,
  );
  yield* runNotifying(
    NOTICE,
    'UPDATE clients SET reset_at = ?, reset_up = ?, reset_down = ?, updated_at = ? WHERE customer_id = ? AND client_id = ?',
    now, sums!.u, sums!.d, now, customerId, clientId,
  );
  return (yield* getClient(customerId, clientId))!;
});

/** The usage history's steps and their lengths: a bucket's traffic ended by its start plus its length. */
const STEPS = [['minute', 60_000], ['hour', 3_600_000], ['day', 86_400_000]] as const;

// The last traffic is read from the usage history (index seeks on usage_by_client), not from the
// event log, which has no index by client.
const SESSIONS_BY_CLIENT = `SELECT s.client_id,
    SUM(CASE WHEN s.status <> 'ended' THEN 1 ELSE 0 END) AS live,
    SUM(CASE WHEN s.status = 'active' THEN 1 ELSE 0 END) AS active,
    SUM(CASE WHEN s.status <> 'ended' AND s.paused THEN 1 ELSE 0 END) AS paused,
    COALESCE(SUM(s.uploaded_bytes), 0) AS up, COALESCE(SUM(s.downloaded_bytes), 0) AS down,
    ${STEPS.map(([step]) => `(SELECT MAX(u.start) FROM usage_buckets u WHERE u.customer_id = s.customer_id AND u.client_id = s.client_id AND u.step = '${step}') AS last_${step}`).join(',\n    ')}
  FROM sessions s WHERE s.customer_id = ?`;

type RawSessions = { client_id: string; live: number; active: number; paused: number; up: number; down: number } & Record<`last_${(typeof STEPS)[number][0]}`, number | null>;
const lastTraffic = (r: RawSessions): number | null => {
  const ends = STEPS.filter(([step]) => r[`last_${step}`] != null).map(([step, ms]) => r[`last_${step}`]! + ms);
  return ends.length ? Math.max(...ends) : null;
};
const toSessions = (r: RawSessions): ClientSessions => ({
  client_id: r.client_id,
  live: r.live,
  active: r.active,
  paused: r.paused,
  up: r.up,
  down: r.down,
  last_traffic: lastTraffic(r),
});

/** What the sessions of each client of the customer add up to (one client only, when given). */
function* clientSessions(customerId: string, clientId?: string): Op<ClientSessions[]> {
  const rows =
    clientId === undefined
      ? yield* all<RawSessions>(`${SESSIONS_BY_CLIENT} GROUP BY s.customer_id, s.client_id`, customerId)
      : yield* all<RawSessions>(`${SESSIONS_BY_CLIENT} AND s.client_id = ? GROUP BY s.customer_id, s.client_id`, customerId, clientId);
  return rows.map(toSessions);
}

/** Client overrides with their own reset_period: the quota job records their bases too. */
function* periodicClientOverrides(): Op<Array<{ customer_id: string; client_id: string; values: LimitValues }>> {
  const rows = yield* all<{ customer_id: string; client_id: string; limits: string }>(`SELECT customer_id, client_id, limits FROM clients WHERE limits LIKE '%reset_period%'`);
  return rows.map((r) => ({ customer_id: r.customer_id, client_id: r.client_id, values: JSON.parse(r.limits) as LimitValues }));
}

/**
 * Records one client's quota base for the period starting at `periodStart` (its stored totals now;
 * kept when one exists), or with `usedSince` (rolling window) rewrites it as its totals minus its
 * usage history since then: store/repos/quota.ts quotaSnapshotSql for a single client.
 */
function* snapshotClientQuotaBase(customerId: string, clientId: string, periodStart: number, usedSince?: number): Op<number> {
  const rolling = usedSince !== undefined;
  const used = (col: string) =>
    `(SELECT COALESCE(SUM(u.${col}), 0) FROM usage_buckets u WHERE u.customer_id = s.customer_id AND u.client_id = s.client_id AND u.start >= CAST(? AS BIGINT))`;
  const sql = `INSERT INTO quota_bases (customer_id, scope, entity_id, period_start, up, down)
    SELECT s.customer_id, 'client', s.client_id, CAST(? AS BIGINT),
      SUM(s.uploaded_bytes)${rolling ? ` - ${used('uploaded_bytes')}` : ''}, SUM(s.downloaded_bytes)${rolling ? ` - ${used('downloaded_bytes')}` : ''}
    FROM sessions s WHERE s.customer_id = ? AND s.client_id = ? GROUP BY s.customer_id, s.client_id
    ON CONFLICT (customer_id, scope, entity_id, period_start) DO ${rolling ? 'UPDATE SET up = excluded.up, down = excluded.down' : 'NOTHING'}`;
  return rolling ? yield* run(sql, periodStart, usedSince, usedSince, customerId, clientId) : yield* run(sql, periodStart, customerId, clientId);
}

export const clientOps = {
  getClient,
  listClientRows,
  getClientControl,
  patchClient,
  patchClientLimits,
  deleteClientLimits,
  resetClientUsage,
  clientSessions,
  periodicClientOverrides,
  snapshotClientQuotaBase,
};
