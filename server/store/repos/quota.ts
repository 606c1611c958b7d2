// Periodic caps (server/quota/*): each entity's lifetime totals at the start of its current period (its
// quota base); its use in the period is its totals minus the base. Entities per scope: global (the
// customer), client (client_id), session (id). One SQL text for both databases.
import type { LimitScope } from '../../domain.ts';
import { all, get, run, Where, type Op } from '../sql/op.ts';

/** Where a periodic cap's period started for one entity: its lifetime totals then. */
export interface QuotaBase {
  up: number;
  down: number;
}

/** The INSERT of snapshotQuotaBases (`oneClient`: only the client named after the customer). */
function quotaSnapshotSql(scope: LimitScope, rolling: boolean, oneClient: boolean): string {
  const entity = scope === 'global' ? 's.customer_id' : scope === 'client' ? 's.client_id' : 's.id';
  const match = scope === 'global' ? '' : scope === 'client' ? ' AND u.client_id = s.client_id' : ' AND u.session_id = s.id';
  const used = (col: string) =>
    `(SELECT COALESCE(SUM(u.${col}), 0) FROM usage_buckets u WHERE u.customer_id = s.customer_id AND u.start >= CAST(? AS BIGINT)${match})`;
  const sum = (col: string) => (scope === 'session' ? `s.${col}` : `SUM(s.${col})`);
  const total = (col: string) => (rolling ? `${sum(col)} - ${used(col)}` : sum(col));
  return `INSERT INTO quota_bases (customer_id, scope, entity_id, period_start, up, down)
    SELECT s.customer_id, '${scope}', ${entity}, CAST(? AS BIGINT), ${total('uploaded_bytes')}, ${total('downloaded_bytes')}
    FROM sessions s WHERE s.customer_id = ?${oneClient ? ' AND s.client_id = ?' : ''}${scope === 'session' ? " AND s.status <> 'ended'" : ''}
    ${scope === 'session' ? '' : `GROUP BY s.customer_id${scope === 'client' ? ', s.client_id' : ''}`}
    ON CONFLICT (customer_id, scope, entity_id, period_start) DO ${rolling ? 'UPDATE SET up = excluded.up, down = excluded.down' : 'NOTHING'}`;
}

/** The base recorded for one entity and period, if any. */
const quotaBase = (customerId: string, scope: LimitScope, entityId: string, periodStart: number) => get<QuotaBase>(
  'SELECT up, down FROM quota_bases WHERE customer_id = ? AND scope = ? AND entity_id = ? AND period_start = ?',
  customerId, scope, entityId, periodStart,
);

/** The bases recorded for one period of a scope's entities (of `entityIds`, when given): one read for a list. */
function* quotaBases(customerId: string, scope: LimitScope, periodStart: number, entityIds?: readonly string[]): Op<Map<string, QuotaBase>> {
  const { where, args } = new Where().equal({ customer_id: customerId, scope, period_start: periodStart }, ['customer_id', 'scope', 'period_start']).in('entity_id', entityIds);
  const rows = yield* all<QuotaBase & { entity_id: string }>(`SELECT entity_id, up, down FROM quota_bases WHERE ${where}`, ...args);
  return new Map(rows.map(({ entity_id, ...base }) => [entity_id, base]));
}

/**
 * Records the bases of the period starting at `periodStart` for every entity of the scope that has none
 * yet (their stored totals now; fixed periods keep the first). With `usedSince` (rolling windows) every
 * base is rewritten as the totals minus the usage history's traffic since then. With `clientId`, only
 * that client's (scope client). Returns the rows written.
 */
export function* snapshotQuotaBases(customerId: string, scope: LimitScope, periodStart: number, usedSince?: number, clientId?: string): Op<number> {
  const sql = quotaSnapshotSql(scope, usedSince !== undefined, clientId !== undefined);
  const window = usedSince === undefined ? [] : [usedSince, usedSince];
  return yield* run(sql, periodStart, ...window, customerId, ...(clientId === undefined ? [] : [clientId]));
}

/** Deletes the bases of periods that started before `before` (rolling windows' key 0 stays). */
const pruneQuotaBases = (before: number) => run('DELETE FROM quota_bases WHERE period_start > 0 AND period_start < ?', before);

export const quotaOps = { quotaBase, quotaBases, snapshotQuotaBases, pruneQuotaBases };
