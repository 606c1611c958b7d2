// Clients as records: what the owner set for one client_id of a customer (disabled, expiry, an
// override of the client limits template, the last usage reset), and what its sessions add up to.
// A row exists only once something was set; a client is also any client_id its sessions name. Every
// change is announced on the limits channel (`<customer>:client`): each data plane re-reads the client.
import { randomUUID } from 'node:crypto';
import type { ClientControl, LimitValues } from '../../domain.ts';
import { isoNow } from '../../time.ts';
import { CHANNELS } from '../sql/channels.ts';
import { allAs, assignments, bool, getCached, lock, run, runNotifying, tx, Where, type Op, type Param } from '../sql/op.ts';
import { sessionOps } from './sessions.ts';
import { snapshotQuotaBases } from './quota.ts';
import { USAGE_STEP_MS, type UsageStep } from './usage.ts';

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
export const CLIENT_COLUMNS = 'client_id, disabled, expires_at, limits_id, limits, limits_created_at, limits_updated_at, reset_at, reset_up, reset_down';

export type RawClient = Record<'client_id' | 'expires_at' | 'limits_id' | 'limits' | 'limits_created_at' | 'limits_updated_at' | 'reset_at', string | null> & { disabled: unknown; reset_up: number | null; reset_down: number | null };

export function toClientRow(r: RawClient): ClientRow {
  return {
    client_id: r.client_id!,
    disabled: bool(r.disabled),
    expires_at: r.expires_at,
    override: r.limits_id && r.limits ? { id: r.limits_id, created_at: r.limits_created_at!, updated_at: r.limits_updated_at!, fields: JSON.parse(r.limits) as LimitValues } : null,
    reset: r.reset_at ? { at: r.reset_at, up: r.reset_up ?? 0, down: r.reset_down ?? 0 } : null,
  };
}

const CLIENT_OF = `SELECT ${CLIENT_COLUMNS} FROM clients WHERE customer_id = ? AND client_id = ?`;

function* getClient(customerId: string, clientId: string): Op<ClientRow | undefined> {
  const r = yield* getCached<RawClient>(CLIENT_OF, customerId, clientId);
  return r ? toClientRow(r) : undefined;
}

/** The customer's client records (only those of `clientIds`, when given), by client_id. */
function* listClientRows(customerId: string, clientIds?: readonly string[]): Op<ClientRow[]> {
  const { where, args } = new Where().and('customer_id = ?', customerId).in('client_id', clientIds);
  return yield* allAs(toClientRow, `SELECT ${CLIENT_COLUMNS} FROM clients WHERE ${where} ORDER BY client_id`, ...args);
}

/** The client's record as a data plane enforces it (undefined: nothing set, the template alone). */
function* getClientControl(customerId: string, clientId: string): Op<ClientControl | undefined> {
  const row = yield* getClient(customerId, clientId);
  return row && toClientControl(row);
}

export function toClientControl(row: ClientRow): ClientControl {
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

/** Sets the columns `values` sets (undefined: unchanged) and updated_at of the row ensureRow made, announced; the row after. */
function* setClient(customerId: string, clientId: string, now: string, values: Record<string, Param | undefined>): Op<ClientRow> {
  const { sets, args } = assignments(values, Object.keys(values));
  const sql = `UPDATE clients SET ${[...sets, 'updated_at = ?'].join(', ')} WHERE customer_id = ? AND client_id = ?`;
  yield* runNotifying(NOTICE, sql, ...args, now, customerId, clientId);
  return (yield* getClient(customerId, clientId))!;
}

/** Sets disabled and/or expires_at (undefined: unchanged; expires_at null: none). */
const patchClient = tx(function* (customerId: string, clientId: string, patch: { disabled?: boolean; expires_at?: string | null }): Op<ClientRow> {
  const now = isoNow();
  yield* ensureRow(customerId, clientId, now);
  return yield* setClient(customerId, clientId, now, { disabled: patch.disabled, expires_at: patch.expires_at });
});

/** Merges `patch` into the client's override (null removes a field), creating it on first use; serialised per client. */
const patchClientLimits = tx(function* (customerId: string, clientId: string, patch: Record<string, number | string | null>): Op<ClientRow> {
  const now = isoNow();
  yield* ensureRow(customerId, clientId, now);
  const current = (yield* getClient(customerId, clientId))!;
  const { id = randomUUID(), created_at = now, fields: stored = {} } = current.override ?? {};
  const fields = JSON.stringify(Object.fromEntries(Object.entries({ ...stored, ...patch }).filter(([, v]) => v !== null)));
  return yield* setClient(customerId, clientId, now, { limits_id: id, limits: fields, limits_created_at: created_at, limits_updated_at: now });
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
  const sums = yield* sessionOps.sumCounters(customerId, clientId);
  return yield* setClient(customerId, clientId, now, { reset_at: now, reset_up: sums.uploaded_bytes, reset_down: sums.downloaded_bytes });
});

const STEPS = Object.keys(USAGE_STEP_MS) as UsageStep[];

// Last traffic is read from the usage history (index seeks on usage_by_client): the event log has no client index.
const SESSIONS_BY_CLIENT = `SELECT s.client_id,
    SUM(CASE WHEN s.status <> 'ended' THEN 1 ELSE 0 END) AS live,
    SUM(CASE WHEN s.status = 'active' THEN 1 ELSE 0 END) AS active,
    SUM(CASE WHEN s.status <> 'ended' AND s.paused THEN 1 ELSE 0 END) AS paused,
    COALESCE(SUM(s.uploaded_bytes), 0) AS up, COALESCE(SUM(s.downloaded_bytes), 0) AS down,
    ${STEPS.map((step) => `(SELECT MAX(u.start) FROM usage_buckets u WHERE u.customer_id = s.customer_id AND u.client_id = s.client_id AND u.step = '${step}') AS last_${step}`).join(',\n    ')}
  FROM sessions s`;

type RawSessions = Omit<ClientSessions, 'last_traffic'> & Record<`last_${UsageStep}`, number | null>;

/** The sums as read; the last traffic ended with the newest bucket of any step (its start plus its length). */
const toSessions = (r: RawSessions): ClientSessions => {
  const { last_minute: _m, last_hour: _h, last_day: _d, ...sums } = r;
  const ends = STEPS.filter((step) => r[`last_${step}`] != null).map((step) => r[`last_${step}`]! + USAGE_STEP_MS[step]);
  return { ...sums, last_traffic: ends.length ? Math.max(...ends) : null };
};

/** What the sessions of each client of the customer add up to (one client, or those of a list, when given). */
function* clientSessions(customerId: string, clientId?: string | readonly string[]): Op<ClientSessions[]> {
  const where = new Where().and('s.customer_id = ?', customerId);
  const { args } = typeof clientId === 'string' ? where.and('s.client_id = ?', clientId) : where.in('s.client_id', clientId);
  return yield* allAs(toSessions, `${SESSIONS_BY_CLIENT} WHERE ${where.where} GROUP BY s.customer_id, s.client_id`, ...args);
}

/** Client overrides with their own reset_period: the quota job records their bases too. */
const periodicClientOverrides = () => allAs(
  ({ limits, ...r }: { customer_id: string; client_id: string; limits: string }) => ({ ...r, values: JSON.parse(limits) as LimitValues }),
  `SELECT customer_id, client_id, limits FROM clients WHERE limits LIKE '%reset_period%'`,
);

/** Records one client's quota base for the period starting at `periodStart` (repos/quota.ts snapshotQuotaBases). */
const snapshotClientQuotaBase = (customerId: string, clientId: string, periodStart: number, usedSince?: number) =>
  snapshotQuotaBases(customerId, 'client', periodStart, usedSince, clientId);

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
