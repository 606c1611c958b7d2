import type { FastifyInstance } from 'fastify';
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

    app.get(url, {
      config,
      schema: { summary: `Read the ${what}`, tags: ['limits'], security: bearer, response: responses({ 200: record }, 401, 403, 404, 429, 500) },
      handler: async (request) => ctx.limits.get(callerOf(request).customerId, scope),
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
        return ctx.limits.update(caller.customerId, apiActor(caller), scope, request.body);
      },
    });

    app.delete(url, {
      config,
      schema: { summary: `Delete the ${what}`, tags: ['limits'], security: bearer, response: responses({ 204: { type: 'null' } }, 401, 403, 404, 429, 500) },
      handler: async (request, reply) => {
        const caller = callerOf(request);
        await ctx.limits.remove(caller.customerId, apiActor(caller), scope);
        return reply.code(204).send();
      },
    });
  }
}
