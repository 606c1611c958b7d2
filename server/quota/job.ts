// The quota job (periodic caps): once a second, for every limits record whose byte
// caps renew, records each entity's base for the current period (its lifetime totals at the
// period's start: server/store/repos/quota.ts quotaSnapshotSql). Fixed periods (day, week, month) keep
// the first base recorded, so every instance of a cluster, every node and every restart counts
// the period from the same point; an entity first seen later in the period gets its totals then
// (it moved nothing before). A rolling window's base is rewritten each time from the usage
// history (totals minus the last 30 days' traffic). Bases of periods long gone are pruned.
//
// The data planes read the bases (DataPlaneDeps.store.quotaBase): SQLite's store directly, the
// PostgreSQL view and the nodes through what they were sent. When the period turns they count
// from the totals they see at that moment, so a session, client or customer over its cap is let
// in again by itself, without any call.
import type { LimitValues, Logger } from '../domain.ts';
import { clientLimitsInForce } from '../contract/client-limits.ts';
import { periodOf, ROLLING_KEY, ROLLING_MS } from '../contract/period.ts';
import type { ControlStore } from '../store/control.ts';
import type { AllLimits } from '../store/store.ts';
import { wallClock } from '../time.ts';

const PRUNE_AFTER_MS = 120 * 86_400_000;

/**
 * Records the bases of the customer's periodic scopes now (those of `scope` only, when given):
 * called when a session is created (its client's and its own base exist before it can move a
 * byte) and when a periodic cap is set (the period counts from then). `known`: the customer's
 * limits when the caller has just read them (a creation), else each scope is read here.
 */
export async function recordQuotaBases(
  store: Pick<ControlStore, 'getLimits' | 'snapshotQuotaBases'>,
  customerId: string,
  scope?: 'global' | 'client' | 'session',
  known?: AllLimits,
): Promise<void> {
  const t = wallClock();
  for (const s of scope ? [scope] : (['global', 'client', 'session'] as const)) {
    const values = known ? known[s] : await store.getLimits(customerId, s);
    const period = periodOf(values, t);
    if (!period) continue;
    if (period.kind === 'rolling_30d') await store.snapshotQuotaBases(customerId, s, ROLLING_KEY, t - ROLLING_MS);
    else await store.snapshotQuotaBases(customerId, s, period.start);
  }
}

/**
 * Records one client's base for the period its caps in force count in (a client whose override
 * has its own reset_period): when the override is set, and from the job once a second.
 */
export async function recordClientQuotaBase(
  store: Pick<ControlStore, 'snapshotClientQuotaBase'>,
  customerId: string,
  clientId: string,
  limits: LimitValues,
  t = wallClock(),
): Promise<void> {
  const period = periodOf(limits, t);
  if (!period) return;
  if (period.kind === 'rolling_30d') await store.snapshotClientQuotaBase(customerId, clientId, ROLLING_KEY, t - ROLLING_MS);
  else await store.snapshotClientQuotaBase(customerId, clientId, period.start);
}

type JobStore = Pick<ControlStore, 'periodicLimits' | 'snapshotQuotaBases' | 'pruneQuotaBases' | 'periodicClientOverrides' | 'snapshotClientQuotaBase' | 'getLimits'>;

/** The bases of clients whose override has its own reset_period (the template's are recorded per scope). */
async function recordOverrideBases(store: JobStore, t: number): Promise<void> {
  for (const o of await store.periodicClientOverrides()) {
    const limits = clientLimitsInForce(await store.getLimits(o.customer_id, 'client'), o.values).limits;
    await recordClientQuotaBase(store, o.customer_id, o.client_id, limits, t);
  }
}

export function startQuotaJob(store: JobStore, log: Logger, everyMs = 1000, now: () => number = wallClock): { stop(): void; runOnce(): Promise<void> } {
  let running: Promise<void> | null = null;
  let lastPrune = 0;
  const runOnce = (): Promise<void> =>
    (running ??= (async () => {
      try {
        const t = now();
        for (const rec of await store.periodicLimits()) {
          const period = periodOf(rec.values, t);
          if (!period) continue;
          if (period.kind === 'rolling_30d') await store.snapshotQuotaBases(rec.customer_id, rec.scope, ROLLING_KEY, t - ROLLING_MS);
          else await store.snapshotQuotaBases(rec.customer_id, rec.scope, period.start);
        }
        await recordOverrideBases(store, t);
        if (t - lastPrune > 3_600_000) {
          lastPrune = t;
          await store.pruneQuotaBases(t - PRUNE_AFTER_MS);
        }
      } catch (err) {
        log.warn({ err: String(err) }, 'recording quota periods failed; retrying');
      }
    })().finally(() => (running = null)));
  const timer = setInterval(() => void runOnce(), everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer), runOnce };
}
