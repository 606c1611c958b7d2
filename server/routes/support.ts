// Support (extension): GET /v2/sessions/{id}/connections, GET /v2/sessions/{id}/refusals and
// GET /v2/clients/{client_id}/refusals: what a session is doing now and why a connection got
// nothing, gathered from the data planes on read (server/support.ts). Owner and agent tokens.
import type { FastifyInstance } from 'fastify';
import { ClientRefusalParams, ConnectionList, RefusalList } from '../contract/support.ts';
import { SessionIdParams } from '../contract/schemas.ts';
import { callerOf } from '../plugins/auth.ts';
import type { SupportService } from '../support.ts';
import { bearer, responses } from './common.ts';

type IdParams = { Params: { id: string } };

/** Under the /v2 prefix: auth, token rate limit and tenancy come from that context. */
export async function supportRoutes(app: FastifyInstance, support: SupportService): Promise<void> {
  app.get<IdParams>('/sessions/:id/connections', {
    schema: {
      summary: 'The open connections of a session, on every data plane (extension)',
      description:
        'Each connection relaying now: transport, client address, node, destination (host and port only), bytes each way and the speed ' +
        'over the last second or two. Gathered from this server, the nodes connected to it and (PostgreSQL) the other instances with ' +
        'their nodes; a node or an instance that does not answer within a second is named in unanswered_nodes or unanswered_instances. ' +
        '404 session_not_found for an unknown session or another customer\'s.',
      tags: ['sessions'],
      security: bearer,
      params: SessionIdParams,
      response: responses({ 200: ConnectionList }, 400, 401, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => support.connections(callerOf(request).customerId, request.params.id),
  });

  app.get<IdParams>('/sessions/:id/refusals', {
    schema: {
      summary: 'Why connections of a session were refused: the last 100 and the counts per reason over the last hour (extension)',
      description:
        'Kept in memory by each data plane (every instance and every node, all asked), so a restart forgets them. Includes the HTTP proxy\'s refusals ' +
        'whose credential names the session (proxy_auth_required, location_unavailable, destination_forbidden). ' +
        '404 session_not_found for an unknown session or another customer\'s.',
      tags: ['sessions'],
      security: bearer,
      params: SessionIdParams,
      response: responses({ 200: RefusalList }, 400, 401, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => support.sessionRefusals(callerOf(request).customerId, request.params.id),
  });

  app.get<{ Params: ClientRefusalParams }>('/clients/:client_id/refusals', {
    schema: {
      summary: 'Why connections of a client\'s sessions were refused: the last 100 and the counts per reason over the last hour (extension)',
      description: 'As for a session, over every session of the client. A client with none (or unknown) has an empty list.',
      tags: ['clients'],
      security: bearer,
      params: ClientRefusalParams,
      response: responses({ 200: RefusalList }, 400, 401, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => support.clientRefusals(callerOf(request).customerId, request.params.client_id),
  });
}
