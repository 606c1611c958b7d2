import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import {
  PauseResult,
  Session,
  SessionCreateRequest,
  SessionIdParams,
  SessionList,
  SessionListQuery,
  SessionStatusResponse,
} from '../contract/schemas.ts';
import { ApiError } from '../contract/errors.ts';
import { callerOf } from '../plugins/auth.ts';
import { apiActor, auditEntry } from '../audit/trail.ts';
import type { Services } from '../services.ts';
import { bearer, noBody, responses } from './common.ts';

type IdParams = { Params: Static<typeof SessionIdParams> };

export async function sessionRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  app.post<{ Body: SessionCreateRequest }>('/sessions', {
    schema: {
      summary: 'Create a session',
      tags: ['sessions'],
      security: bearer,
      body: SessionCreateRequest,
      response: responses({ 201: Session }, 400, 401, 404, 413, 415, 422, 429, 500),
    },
    handler: async (request, reply) => {
      const caller = callerOf(request);
      // The session and its audit record are written in one transaction.
      const made = await ctx.sessions.create(caller.customerId, request.body, (s) =>
        auditEntry(caller.customerId, apiActor(caller), { action: 'session.create', target: { type: 'session', id: s.id }, sessionId: s.id, clientId: s.client_id, after: { client_id: s.client_id, zone: s.zone, reusable: s.reusable } }),
      );
      return reply.code(201).send(made);
    },
  });

  app.get<{ Querystring: SessionListQuery }>('/sessions', {
    schema: {
      summary: 'List sessions, newest first (extension)',
      description: 'Extension: filters client_id, status, zone; cursor pagination with next_cursor.',
      tags: ['sessions'],
      security: bearer,
      querystring: SessionListQuery,
      response: responses({ 200: SessionList }, 400, 401, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => ctx.sessions.list(callerOf(request).customerId, request.query),
  });

  app.get<IdParams>('/sessions/:id', {
    schema: {
      summary: 'Get a session with its configuration (extension)',
      tags: ['sessions'],
      security: bearer,
      params: SessionIdParams,
      response: responses({ 200: Session }, 400, 401, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => {
      return ctx.sessions.getView(callerOf(request).customerId, request.params.id);
    },
  });

  app.get<IdParams>('/sessions/:id/status', {
    schema: {
      summary: 'Status and traffic counters of a session',
      tags: ['sessions'],
      security: bearer,
      params: SessionIdParams,
      response: responses({ 200: SessionStatusResponse }, 400, 401, 404, 429, 500),
    },
    // Not async: the service's promise is the answer (no second promise per read).
    handler: (request) => ctx.sessions.status(callerOf(request).customerId, request.params.id),
  });

  for (const action of ['pause', 'resume'] as const) {
    app.patch<IdParams>(`/sessions/:id/${action}`, {
      schema: {
        summary: action === 'pause' ? 'Pause a reusable session (closes its connections)' : 'Resume a paused session',
        tags: ['sessions'],
        security: bearer,
        params: SessionIdParams,
        response: responses({ 200: PauseResult }, 400, 401, 404, 429, 500),
      },
      handler: async (request) => {
        noBody(request.body);
        const caller = callerOf(request);
        const id = request.params.id;
        return ctx.pause.set(caller.customerId, apiActor(caller), id, action === 'pause');
      },
    });
  }
}
