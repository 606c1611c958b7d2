import type { FastifyInstance } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import {
  ClientLimits,
  ClientLimitsUpdate,
  GlobalLimits,
  GlobalLimitsUpdate,
  type LimitScope,
  SessionLimits,
  SessionLimitsUpdate,
} from '../contract/schemas.ts';
import { callerOf } from '../plugins/auth.ts';
import { apiActor } from '../audit/trail.ts';
import { recordQuotaBases } from '../quota/job.ts';
import type { Services } from '../services.ts';
import { bearer, responses } from './common.ts';

const SCOPES = {
  global: { record: GlobalLimits, update: GlobalLimitsUpdate, what: 'global limits (all clients of the customer together)' },
  client: { record: ClientLimits, update: ClientLimitsUpdate, what: 'client limits (each client on its own)' },
  session: { record: SessionLimits, update: SessionLimitsUpdate, what: 'session limits (defaults of every session)' },
} as const;

export async function limitRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  for (const scope of Object.keys(SCOPES) as LimitScope[]) {
    const { record, update, what } = SCOPES[scope];
    const url = `/customer/limits/${scope}`;
    const config = { ownerOnly: 'limits' };
    const notSet = () => new ApiError('limits_not_found', `No ${scope} limits are set.`, { scope });

    app.get(url, {
      config,
      schema: { summary: `Read the ${what}`, tags: ['limits'], security: bearer, response: responses({ 200: record }, 401, 403, 404, 429, 500) },
      handler: async (request) => (await ctx.data.getLimitsRecord(callerOf(request).customerId, scope)) ?? Promise.reject(notSet()),
    });

    app.patch<{ Body: Record<string, number | null> }>(url, {
      config,
      schema: {
        summary: `Update the ${what}`,
        description: 'Merges: only the fields sent change; a field sent as null is removed. The first PATCH creates the record.',
        tags: ['limits'],
        security: bearer,
        body: update,
        response: responses({ 200: record }, 400, 401, 403, 404, 413, 415, 429, 500),
      },
      handler: async (request) => {
        const caller = callerOf(request);
        const { customerId } = caller;
        const before = await ctx.data.getLimitsRecord(customerId, scope);
        const saved = await ctx.data.patchLimits(customerId, scope, request.body);
        // A periodic cap counts from now: its entities' bases are recorded before the data planes re-read it.
        await recordQuotaBases(ctx.data, customerId, scope);
        ctx.sessions.limitsChanged(customerId);
        ctx.dataPlane?.limitsChanged(customerId);
        await ctx.webhooks?.emitQuietly(customerId, 'limits_changed', { scope, action: 'updated', limits: saved as Record<string, unknown> });
        ctx.changes.emit();
        await ctx.audit.record(customerId, apiActor(caller), { action: 'limits.update', target: { type: 'limits', id: scope }, before: before ?? null, after: saved });
        return saved;
      },
    });

    app.delete(url, {
      config,
      schema: { summary: `Delete the ${what}`, tags: ['limits'], security: bearer, response: responses({ 204: { type: 'null' } }, 401, 403, 404, 429, 500) },
      handler: async (request, reply) => {
        const caller = callerOf(request);
        const { customerId } = caller;
        const before = await ctx.data.getLimitsRecord(customerId, scope);
        if (!(await ctx.data.deleteLimits(customerId, scope))) throw notSet();
        ctx.sessions.limitsChanged(customerId);
        ctx.dataPlane?.limitsChanged(customerId);
        await ctx.webhooks?.emitQuietly(customerId, 'limits_changed', { scope, action: 'deleted', limits: null });
        ctx.changes.emit();
        await ctx.audit.record(customerId, apiActor(caller), { action: 'limits.delete', target: { type: 'limits', id: scope }, before: before ?? null, after: null });
        return reply.code(204).send();
      },
    });
  }
}
