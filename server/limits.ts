// Limits use cases: reading, updating and deleting a customer's limits of one scope. Updating
// or deleting is one call that stores the change, records the periodic caps' bases, drops the
// cached limits of the session service and of this process's data plane, queues the webhook,
// wakes the node channels and writes the audit trail, in that order.
import type { AuditActor, AuditTrail } from './audit/trail.ts';
import { ApiError } from './contract/errors.ts';
import type { WebhookEventKind } from './contract/webhooks.ts';
import type { DataPlane } from './dataplane/api.ts';
import type { LimitScope } from './domain.ts';
import type { ChangeFeed } from './events/changes.ts';
import { recordQuotaBases } from './quota/job.ts';
import type { ControlStore } from './store/control.ts';
import type { LimitsRecord } from './contract/schemas.ts';

export interface LimitsDeps {
  data: ControlStore;
  dataPlane: () => Pick<DataPlane, 'limitsChanged'> | null;
  webhooks: { emitQuietly(customerId: string, kind: WebhookEventKind, data: Record<string, unknown>): Promise<void> } | null;
  changes: ChangeFeed;
  audit: Pick<AuditTrail, 'record'>;
}

const notSet = (scope: LimitScope) => new ApiError('limits_not_found', `No ${scope} limits are set.`, { scope });

export class LimitsService {
  private readonly deps: LimitsDeps;

  constructor(deps: LimitsDeps) {
    this.deps = deps;
  }

  /** The record of the scope; limits_not_found when none is set. */
  async get(customerId: string, scope: LimitScope): Promise<LimitsRecord> {
    return (await this.deps.data.getLimitsRecord(customerId, scope)) ?? Promise.reject(notSet(scope));
  }

  /** Merges the patch (a null removes a field; the first one creates the record). */
  async update(customerId: string, actor: AuditActor, scope: LimitScope, patch: Record<string, number | null>): Promise<LimitsRecord> {
    const { data, audit } = this.deps;
    const before = await data.getLimitsRecord(customerId, scope);
    const saved = await data.patchLimits(customerId, scope, patch);
    // A periodic cap counts from now: its entities' bases are recorded before the data planes re-read it.
    await recordQuotaBases(data, customerId, scope);
    await this.changed(customerId, { scope, action: 'updated', limits: saved as unknown as Record<string, unknown> });
    await audit.record(customerId, actor, { action: 'limits.update', target: { type: 'limits', id: scope }, before: before ?? null, after: saved });
    return saved;
  }

  /** Deletes the scope's record; limits_not_found when none is set. */
  async remove(customerId: string, actor: AuditActor, scope: LimitScope): Promise<void> {
    const { data, audit } = this.deps;
    const before = await data.getLimitsRecord(customerId, scope);
    if (!(await data.deleteLimits(customerId, scope))) throw notSet(scope);
    await this.changed(customerId, { scope, action: 'deleted', limits: null });
    await audit.record(customerId, actor, { action: 'limits.delete', target: { type: 'limits', id: scope }, before: before ?? null, after: null });
  }

  /** Everything that holds or carries the customer's limits hears of the change. */
  private async changed(customerId: string, webhook: Record<string, unknown>): Promise<void> {
    this.deps.dataPlane()?.limitsChanged(customerId);
    await this.deps.webhooks?.emitQuietly(customerId, 'limits_changed', webhook);
    this.deps.changes.emit();
  }
}
