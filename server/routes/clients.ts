// /v2/clients (extension): clients as records. Owner and agent tokens read them; only an owner
// disables one, sets its expiry, its limits override or resets its usage (each audited). Each
// route is its schema and one call to the clients service (server/clients/service.ts).
import type { FastifyInstance } from 'fastify';
import { apiActor } from '../audit/trail.ts';
import { Client, ClientLimitsOverride, ClientLimitsOverrideUpdate, ClientList, ClientListQuery, ClientParams, ClientUpdate } from '../contract/clients.ts';
import { callerOf } from '../plugins/auth.ts';
import type { Services } from '../services.ts';
import { bearer, noBody, responses } from './common.ts';

type Params = { client_id: string };
const tags = ['clients'];
const owner = { ownerOnly: 'clients' };
const schema = (s: Record<string, unknown>) => ({ tags, security: bearer, 'x-extension': true, ...s }) as object;

export async function clientRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  app.get<{ Querystring: ClientListQuery }>('/clients', {
    schema: schema({
      summary: 'List the clients of the customer (extension)',
      description:
        'Every client_id its sessions name, and every client with a record; newest last_seen first, then client_id. `status` keeps only clients in that status; ' +
        '`client_id` (repeatable) only the clients named, as a screen showing a page of sessions asks for their clients.',
      querystring: ClientListQuery,
      response: responses({ 200: ClientList }, 400, 401, 429, 500),
    }),
    handler: async (request) => ctx.clients.list(callerOf(request).customerId, request.query),
  });

  app.get<{ Params: Params }>('/clients/:client_id', {
    schema: schema({ summary: 'Read one client (extension)', params: ClientParams, response: responses({ 200: Client }, 400, 401, 404, 429, 500) }),
    handler: async (request) => ctx.clients.get(callerOf(request).customerId, request.params.client_id),
  });

  app.patch<{ Params: Params; Body: { disabled?: boolean; expires_at?: string | null } }>('/clients/:client_id', {
    config: owner,
    schema: schema({
      summary: 'Disable or enable a client, or set when its access ends (extension)',
      description:
        'disabled: true cuts every open connection of every session of the client at once (here and on every data-plane node) and refuses new ones; ' +
        'expires_at (in the future; null: never): at that time its connections are cut and new ones refused. A new session for a disabled or expired client is 422.',
      params: ClientParams,
      body: ClientUpdate,
      response: responses({ 200: Client }, 400, 401, 403, 413, 415, 429, 500),
    }),
    handler: async (request) => {
      const caller = callerOf(request);
      return ctx.clients.update(caller.customerId, apiActor(caller), request.params.client_id, request.body);
    },
  });

  await clientLimitRoutes(app, ctx);
}

/** The client's override of the client limits template: the client limits record's fields and merge. */
async function clientLimitRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  const limitsUrl = '/clients/:client_id/limits';
  const what = 'the client\'s override of the client limits template';
  app.get<{ Params: Params }>(limitsUrl, {
    schema: schema({ summary: `Read ${what} (extension)`, params: ClientParams, response: responses({ 200: ClientLimitsOverride }, 400, 401, 404, 429, 500) }),
    handler: async (request) => ctx.clients.getLimits(callerOf(request).customerId, request.params.client_id),
  });

  app.patch<{ Params: Params; Body: Record<string, number | string | null> }>(limitsUrl, {
    config: owner,
    schema: schema({
      summary: `Update ${what} (extension)`,
      description:
        'The fields of the client limits record, for this client only: each field set replaces the template\'s. Merges: only the fields sent change; null removes one. The first PATCH creates the override.',
      params: ClientParams,
      body: ClientLimitsOverrideUpdate,
      response: responses({ 200: ClientLimitsOverride }, 400, 401, 403, 413, 415, 429, 500),
    }),
    handler: async (request) => {
      const caller = callerOf(request);
      return ctx.clients.updateLimits(caller.customerId, apiActor(caller), request.params.client_id, request.body);
    },
  });

  app.delete<{ Params: Params }>(limitsUrl, {
    config: owner,
    schema: schema({ summary: `Delete ${what} (extension)`, params: ClientParams, response: responses({ 204: { type: 'null' } }, 400, 401, 403, 404, 429, 500) }),
    handler: async (request, reply) => {
      const caller = callerOf(request);
      await ctx.clients.removeLimits(caller.customerId, apiActor(caller), request.params.client_id);
      return reply.code(204).send();
    },
  });

  app.post<{ Params: Params }>('/clients/:client_id/reset-usage', {
    config: owner,
    schema: schema({
      summary: 'Start counting the client\'s caps again from now (extension)',
      description: 'The usage counted against its byte caps in force starts again now: the current period\'s, or the lifetime\'s for caps without reset_period. Takes no body.',
      params: ClientParams,
      response: responses({ 200: Client }, 400, 401, 403, 404, 413, 415, 429, 500),
    }),
    handler: async (request) => {
      noBody(request.body);
      const caller = callerOf(request);
      return ctx.clients.resetUsage(caller.customerId, apiActor(caller), request.params.client_id);
    },
  });
}
