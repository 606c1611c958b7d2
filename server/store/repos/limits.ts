// The three limits records of a customer (global, client template, session template): one JSON
// object of fields per scope, merged field by field.
import { randomUUID } from 'node:crypto';
import type { LimitScope, LimitValues } from '../../domain.ts';
import type { LimitsRecord } from '../../contract/schemas.ts';
import { isoNow } from '../../time.ts';
import { CHANNELS } from '../sql/channels.ts';
import { all, changedAny, getCached, lock, run, runNotifying, tx, type Op } from '../sql/op.ts';

const LIMITS_NOTICE = { channel: CHANNELS.limits, expr: "customer_id || ':' || scope" };
const SCOPES: readonly LimitScope[] = ['global', 'client', 'session'];

/** A customer's limits of every scope (a scope not set: absent). */
export type AllLimits = Partial<Record<LimitScope, LimitValues>>;

/** The three records' fields as columns `limits_<scope>` of one row, for a customer given as an SQL expression. */
export const scopeFields = (customer: string): string =>
  SCOPES.map((s) => `(SELECT fields FROM limits WHERE customer_id = ${customer} AND scope = '${s}') AS limits_${s}`).join(', ');

/** The `limits_<scope>` columns of a row read with scopeFields. */
export function toAllLimits(r: Partial<Record<`limits_${LimitScope}`, string | null>>): AllLimits {
  const out: AllLimits = {};
  for (const s of SCOPES) {
    const fields = r[`limits_${s}`];
    if (fields != null) out[s] = JSON.parse(fields) as LimitValues;
  }
  return out;
}

const ALL_LIMITS = `SELECT ${scopeFields('?')}`;
/** Every scope's limits of the customer in one statement. */
function* getAllLimits(customerId: string): Op<AllLimits> {
  return toAllLimits((yield* getCached<Record<`limits_${LimitScope}`, string | null>>(ALL_LIMITS, customerId, customerId, customerId))!);
}

function* getLimitsRecord(customerId: string, scope: LimitScope): Op<LimitsRecord | undefined> {
  const r = yield* getCached<{ id: string; fields: string; created_at: string; updated_at: string }>(
    'SELECT id, fields, created_at, updated_at FROM limits WHERE customer_id = ? AND scope = ?',
    customerId,
    scope,
  );
  if (!r) return undefined;
  return { id: r.id, created_at: r.created_at, updated_at: r.updated_at, ...(JSON.parse(r.fields) as LimitValues) };
}

function* getLimits(customerId: string, scope: LimitScope): Op<LimitValues | undefined> {
  const r = yield* getCached<{ fields: string }>('SELECT fields FROM limits WHERE customer_id = ? AND scope = ?', customerId, scope);
  return r ? (JSON.parse(r.fields) as LimitValues) : undefined;
}

/**
 * Merges `patch` into the record (null removes a field), creating it on first use. Patches of
 * one record apply one after the other (the lock), so concurrent ones from several instances
 * are all kept.
 */
const patchLimits = tx(function* (customerId: string, scope: LimitScope, patch: Record<string, number | string | null>): Op<LimitsRecord> {
  const now = isoNow();
  yield* lock(`limits:${customerId}:${scope}`);
  yield* run(
    `INSERT INTO limits (customer_id, scope, id, fields, created_at, updated_at) VALUES (?, ?, ?, '{}', ?, ?)
     ON CONFLICT (customer_id, scope) DO NOTHING`,
    customerId,
    scope,
    randomUUID(),
    now,
    now,
  );
  // The patch over what is stored; a null (or anything not a number or a string) goes.
  const fields = Object.entries({ ...(yield* getLimits(customerId, scope)), ...patch }).filter(([, v]) => typeof v === 'number' || typeof v === 'string');
  const json = JSON.stringify(Object.fromEntries(fields));
  yield* runNotifying(LIMITS_NOTICE, 'UPDATE limits SET fields = ?, updated_at = ? WHERE customer_id = ? AND scope = ?', json, now, customerId, scope);
  return (yield* getLimitsRecord(customerId, scope))!;
});

const deleteLimits = (customerId: string, scope: LimitScope) =>
  changedAny(runNotifying(LIMITS_NOTICE, 'DELETE FROM limits WHERE customer_id = ? AND scope = ?', customerId, scope));

/** Every limits record whose caps renew (reset_period set and not none): the quota job's work. */
function* periodicLimits(): Op<Array<{ customer_id: string; scope: LimitScope; values: LimitValues }>> {
  const rows = yield* all<{ customer_id: string; scope: LimitScope; fields: string }>(`SELECT customer_id, scope, fields FROM limits WHERE fields LIKE '%reset_period%'`);
  return rows
    .map((r) => ({ customer_id: r.customer_id, scope: r.scope, values: JSON.parse(r.fields) as LimitValues }))
    .filter((r) => r.values.reset_period && r.values.reset_period !== 'none');
}

export const limitOps = { getLimitsRecord, getLimits, getAllLimits, patchLimits, deleteLimits, periodicLimits };
