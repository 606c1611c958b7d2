// Clients use cases (extension): list and read clients, disable one or set its expiry, its
// override of the client limits template, a usage reset; and the resolver every enforcement
// point shares, limitsInForce. A change is one call that stores it, records the periodic caps'
// bases, drops the cached limits of the session service and of this process's data plane, queues
// the webhook, wakes the node channels and writes the audit trail, like a limits change
// (server/limits.ts). The other instances' data planes hear of it through the store's notice.
import type { AuditActor } from '../audit/trail.ts';
import type { Client, ClientLimitsOverride, ClientListQuery, ClientUpdate } from '../contract/clients.ts';
import { clientLimitsInForce } from '../contract/client-limits.ts';
import { ApiError } from '../contract/errors.ts';
import type { WebhookEventKind } from '../contract/webhooks.ts';
import type { LimitValues } from '../domain.ts';
import { recordClientQuotaBase } from '../quota/job.ts';
import type { ClientRow } from '../store/types.ts';
import { byLastSeen, clientViews } from './view.ts';
import type { LimitsDeps } from '../limits.ts';

/** What a limits change needs (server/limits.ts), and the wall clock (server/time.ts wallClock, which tests may set). */
export interface ClientsDeps extends LimitsDeps {
  now: () => number;
}

const MAX_AHEAD_MS = 10 * 365 * 86_400_000;
const notFound = (clientId: string) => new ApiError('client_not_found', `Client "${clientId}" has no sessions and no record.`, { client_id: clientId });
const noOverride = (clientId: string) => new ApiError('limits_not_found', `Client "${clientId}" has no limits override; the client limits template applies.`, { client_id: clientId });

/** The override as the API shows it: the record's id and times, then its fields. */
function overrideRecord(row: ClientRow | undefined): ClientLimitsOverride | undefined {
  const o = row?.override;
  return o ? ({ id: o.id, created_at: o.created_at, updated_at: o.updated_at, ...o.fields } as ClientLimitsOverride) : undefined;
}

export class ClientsService {
  private readonly deps: ClientsDeps;

  constructor(deps: ClientsDeps) {
    this.deps = deps;
  }

  /** The client limit fields in force for one client: its override's where set, else the template's. */
  async limitsInForce(customerId: string, clientId: string): Promise<LimitValues> {
    const [template, row] = await Promise.all([this.deps.data.getLimits(customerId, 'client'), this.deps.data.getClient(customerId, clientId)]);
    return clientLimitsInForce(template, row?.override?.fields).limits;
  }

  /** Every client of the customer (its sessions' client_ids and those with a record), or those named; newest last_seen first. */
  async list(customerId: string, query: ClientListQuery = {}): Promise<{ clients: Client[] }> {
    const { data } = this.deps;
    const named = query.client_id === undefined ? undefined : [...new Set(typeof query.client_id === 'string' ? [query.client_id] : query.client_id)];
    const [rows, sessions, template] = await Promise.all([data.listClientRows(customerId, named), data.clientSessions(customerId, named), data.getLimits(customerId, 'client')]);
    const byId = new Map(rows.map((r) => [r.client_id, r]));
    const sums = new Map(sessions.map((s) => [s.client_id, s]));
    const facts = [...new Set([...sums.keys(), ...byId.keys()])].map((clientId) => ({ clientId, row: byId.get(clientId), sessions: sums.get(clientId), template }));
    const clients = await clientViews(data, customerId, facts, this.deps.now());
    return { clients: clients.filter((c) => query.status === undefined || c.status === query.status).sort(byLastSeen) };
  }

  /** One client; client_not_found when it has neither sessions nor a record. */
  async get(customerId: string, clientId: string): Promise<Client> {
    const { data } = this.deps;
    const [row, sessions, template] = await Promise.all([data.getClient(customerId, clientId), data.clientSessions(customerId, clientId), data.getLimits(customerId, 'client')]);
    if (!row && !sessions.length) throw notFound(clientId);
    return (await clientViews(data, customerId, [{ clientId, row, sessions: sessions[0], template }], this.deps.now()))[0];
  }

  /** Disables (or enables) the client and/or sets its expiry; makes its record when it has none. */
  async update(customerId: string, actor: AuditActor, clientId: string, body: ClientUpdate): Promise<Client> {
    const { data, audit } = this.deps;
    if (body.expires_at != null) {
      const at = Date.parse(body.expires_at);
      const now = this.deps.now();
      if (!Number.isFinite(at) || at <= now) throw new ApiError('invalid_request', 'expires_at must be a time in the future (or null: never).', { field: 'expires_at', value: body.expires_at });
      if (at > now + MAX_AHEAD_MS) throw new ApiError('invalid_request', 'expires_at may be at most ten years ahead.', { field: 'expires_at', value: body.expires_at });
      body = { ...body, expires_at: new Date(at).toISOString() };
    }
    const before = await data.getClient(customerId, clientId);
    const saved = await data.patchClient(customerId, clientId, body);
    await this.changed(customerId, 'client_changed', { client_id: clientId, action: 'updated', disabled: saved.disabled, expires_at: saved.expires_at });
    const view = (r: ClientRow | undefined) => (r ? { disabled: r.disabled, expires_at: r.expires_at } : null);
    await audit.record(customerId, actor, { action: 'client.update', target: { type: 'client', id: clientId }, clientId, before: view(before), after: view(saved) });
    return this.get(customerId, clientId);
  }

  /** The client's override of the client limits template; limits_not_found when none is set. */
  async getLimits(customerId: string, clientId: string): Promise<ClientLimitsOverride> {
    const row = await this.deps.data.getClient(customerId, clientId);
    if (!row) await this.get(customerId, clientId);
    return overrideRecord(row) ?? Promise.reject(noOverride(clientId));
  }

  /** Merges the patch into the override (null removes a field; the first one creates it). */
  async updateLimits(customerId: string, actor: AuditActor, clientId: string, patch: Record<string, number | string | null>): Promise<ClientLimitsOverride> {
    const { data, audit } = this.deps;
    const before = overrideRecord(await data.getClient(customerId, clientId));
    const saved = overrideRecord(await data.patchClientLimits(customerId, clientId, patch))!;
    // A periodic cap counts from now: the client's base is recorded before the data planes re-read it.
    await recordClientQuotaBase(data, customerId, clientId, await this.limitsInForce(customerId, clientId));
    await this.changed(customerId, 'limits_changed', { scope: 'client', client_id: clientId, action: 'updated', limits: saved });
    await audit.record(customerId, actor, { action: 'client.limits_update', target: { type: 'client', id: clientId }, clientId, before: before ?? null, after: saved });
    return saved;
  }

  /** Removes the override (the template applies again); limits_not_found when none is set. */
  async removeLimits(customerId: string, actor: AuditActor, clientId: string): Promise<void> {
    const { data, audit } = this.deps;
    const row = await data.getClient(customerId, clientId);
    if (!row) await this.get(customerId, clientId);
    const before = overrideRecord(row);
    if (!before || !(await data.deleteClientLimits(customerId, clientId))) throw noOverride(clientId);
    await recordClientQuotaBase(data, customerId, clientId, await this.limitsInForce(customerId, clientId));
    await this.changed(customerId, 'limits_changed', { scope: 'client', client_id: clientId, action: 'deleted', limits: null });
    await audit.record(customerId, actor, { action: 'client.limits_delete', target: { type: 'client', id: clientId }, clientId, before, after: null });
  }

  /** Starts the count of the client's caps again from now (the current period's, or a lifetime cap's). */
  async resetUsage(customerId: string, actor: AuditActor, clientId: string): Promise<Client> {
    const { data, audit } = this.deps;
    const before = await this.get(customerId, clientId);
    const saved = await data.resetClientUsage(customerId, clientId);
    await this.changed(customerId, 'client_changed', { client_id: clientId, action: 'usage_reset', reset_at: saved.reset?.at ?? null });
    const after = await this.get(customerId, clientId);
    const usage = (c: Client) => ({ status: c.status, period: c.period, uploaded_bytes: c.uploaded_bytes, downloaded_bytes: c.downloaded_bytes, reset_at: null as string | null });
    await audit.record(customerId, actor, {
      action: 'client.reset_usage',
      target: { type: 'client', id: clientId },
      clientId,
      before: usage(before),
      after: { ...usage(after), reset_at: saved.reset?.at ?? null },
    });
    return after;
  }

  /** Everything that holds or carries the customer's limits hears of the change. */
  private async changed(customerId: string, kind: WebhookEventKind, webhook: Record<string, unknown>): Promise<void> {
    this.deps.dataPlane()?.limitsChanged(customerId);
    await this.deps.webhooks?.emitQuietly(customerId, kind, webhook);
    this.deps.changes.emit();
  }
}
