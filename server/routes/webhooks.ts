// Webhook routes (extension): /v2/webhooks, owner tokens only (agents get 403), each customer
// seeing only its own endpoints. The secret appears in the POST answer and nowhere else.
import type { FastifyInstance } from 'fastify';
import {
  Webhook,
  WebhookCreate,
  WebhookCreated,
  WebhookDeliveryList,
  WebhookDeliveryQuery,
  WebhookList,
  WebhookParams,
  WebhookTestResult,
  WebhookUpdate,
} from '../contract/webhooks.ts';
import { callerOf } from '../plugins/auth.ts';
import { apiActor, type AuditTrail } from '../audit/trail.ts';
import { maskUrl } from '../audit/redact.ts';
import type { WebhookService } from '../webhooks/service.ts';
import { bearer, responses } from './common.ts';

type P = { Params: { id: string } };
const tags = ['webhooks'];
const config = { ownerOnly: 'webhooks' };

/** What the audit trail keeps of an endpoint: never its secret, its URL masked (its path or query may be a credential). */
const shown = (w: { url: string; events: readonly string[]; enabled?: boolean }) => ({ url: maskUrl(w.url), events: [...w.events], enabled: w.enabled });

export async function webhookRoutes(app: FastifyInstance, hooks: WebhookService, audit?: AuditTrail): Promise<void> {
  createRoute(app, hooks, audit);
  readRoutes(app, hooks);
  changeRoutes(app, hooks, audit);
  testRoute(app, hooks, audit);
}

/** POST /webhooks: the secret is in its answer only. */
function createRoute(app: FastifyInstance, hooks: WebhookService, audit?: AuditTrail): void {
  app.post<{ Body: WebhookCreate }>('/webhooks', {
    config,
    schema: {
      summary: 'Register a webhook endpoint (extension)',
      description:
        'Deliveries are POSTed as JSON {id, type, created_at, data} with X-VAD-Delivery (the same id on every attempt), X-VAD-Event and X-VAD-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>. The secret (generated when absent) is in this answer only.',
      tags,
      security: bearer,
      body: WebhookCreate,
      response: responses({ 201: WebhookCreated }, 400, 401, 403, 413, 415, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request, reply) => {
      const caller = callerOf(request);
      const made = await hooks.create(caller.customerId, request.body);
      await audit?.record(caller.customerId, apiActor(caller), { action: 'webhook.create', target: { type: 'webhook', id: made.id }, after: shown(made) });
      return reply.code(201).send(made);
    },
  });
}

/** The endpoints and their last deliveries, read. */
function readRoutes(app: FastifyInstance, hooks: WebhookService): void {
  app.get('/webhooks', {
    config,
    schema: { summary: 'List webhook endpoints (extension)', tags, security: bearer, response: responses({ 200: WebhookList }, 401, 403, 429, 500), 'x-extension': true } as object,
    handler: async (request) => ({ webhooks: await hooks.list(callerOf(request).customerId) }),
  });

  app.get<P>('/webhooks/:id', {
    config,
    schema: { summary: 'Read a webhook endpoint (extension)', tags, security: bearer, params: WebhookParams, response: responses({ 200: Webhook }, 400, 401, 403, 404, 429, 500), 'x-extension': true } as object,
    handler: async (request) => hooks.get(callerOf(request).customerId, request.params.id),
  });

  app.get<P & { Querystring: { limit?: number } }>('/webhooks/:id/deliveries', {
    config,
    schema: {
      summary: 'The last deliveries of a webhook endpoint, newest first (extension)',
      tags,
      security: bearer,
      params: WebhookParams,
      querystring: WebhookDeliveryQuery,
      response: responses({ 200: WebhookDeliveryList }, 400, 401, 403, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => ({ deliveries: await hooks.deliveries(callerOf(request).customerId, request.params.id, request.query.limit ?? 50) }),
  });
}

/** PATCH and DELETE /webhooks/:id, audited with the endpoint before and after. */
function changeRoutes(app: FastifyInstance, hooks: WebhookService, audit?: AuditTrail): void {
  app.patch<P & { Body: WebhookUpdate }>('/webhooks/:id', {
    config,
    schema: {
      summary: 'Change a webhook endpoint\'s URL, kinds or enabled flag (extension)',
      tags,
      security: bearer,
      params: WebhookParams,
      body: WebhookUpdate,
      response: responses({ 200: Webhook }, 400, 401, 403, 404, 413, 415, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => {
      const caller = callerOf(request);
      const before = await hooks.get(caller.customerId, request.params.id);
      const after = await hooks.update(caller.customerId, request.params.id, request.body);
      await audit?.record(caller.customerId, apiActor(caller), { action: 'webhook.update', target: { type: 'webhook', id: after.id }, before: shown(before), after: shown(after) });
      return after;
    },
  });

  app.delete<P>('/webhooks/:id', {
    config,
    schema: {
      summary: 'Delete a webhook endpoint and its pending deliveries (extension)',
      tags,
      security: bearer,
      params: WebhookParams,
      response: responses({ 204: { type: 'null' } }, 400, 401, 403, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request, reply) => {
      const caller = callerOf(request);
      const before = await hooks.get(caller.customerId, request.params.id);
      await hooks.delete(caller.customerId, request.params.id);
      await audit?.record(caller.customerId, apiActor(caller), { action: 'webhook.delete', target: { type: 'webhook', id: request.params.id }, before: shown(before), after: null });
      return reply.code(204).send();
    },
  });
}

/** POST /webhooks/:id/test: one signed `test` delivery now, its answer awaited; audited with the outcome. */
function testRoute(app: FastifyInstance, hooks: WebhookService, audit?: AuditTrail): void {
  app.post<P>('/webhooks/:id/test', {
    config,
    schema: {
      summary: 'Send a test delivery to a webhook endpoint now (extension)',
      description:
        'POSTs one delivery of type `test`, signed and sent like every delivery (same headers, same egress policy), waits for the answer ' +
        '(the usual timeout) and tells what came back. Not queued, not retried, not counted in the endpoint\'s health; sent whether the endpoint is enabled or not.',
      tags,
      security: bearer,
      params: WebhookParams,
      response: responses({ 200: WebhookTestResult }, 400, 401, 403, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => {
      const caller = callerOf(request);
      const hook = await hooks.get(caller.customerId, request.params.id);
      const result = await hooks.test(caller.customerId, request.params.id);
      const after = { ...shown(hook), delivered: result.delivered, status_code: result.status_code, error: result.error };
      await audit?.record(caller.customerId, apiActor(caller), { action: 'webhook.test', target: { type: 'webhook', id: hook.id }, after });
      return result;
    },
  });
}
