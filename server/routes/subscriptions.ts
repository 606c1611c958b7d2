// Subscription routes: the /v2 extension that manages a client's subscription (owner and agent
// tokens, each customer seeing only its own clients), and the public GET /sub/<secret> feed.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import {
  Subscription,
  SubscriptionFeedParams,
  SubscriptionFeedQuery,
  SubscriptionParams,
  SUBSCRIPTION_FORMAT_ALIASES,
  type SubscriptionFormat,
} from '../contract/subscriptions.ts';
import { ErrorRecord } from '../contract/schemas.ts';
import { callerOf } from '../plugins/auth.ts';
import { apiActor, type AuditTrail } from '../audit/trail.ts';
import { sendError } from '../plugins/errors.ts';
import { formatForUserAgent, isKnownClient, USER_AGENT_TABLE } from '../subscriptions/formats.ts';
import { PAGE_CSP } from '../subscriptions/page.ts';
import { deviceOf } from '../subscriptions/devices.ts';
import type { SubscriptionService } from '../subscriptions/service.ts';
import { bearer, noBody, responses } from './common.ts';

type P = { Params: SubscriptionParams };

/** Under the /v2 prefix: auth, token rate limit and tenancy come from that context. */
export async function subscriptionRoutes(app: FastifyInstance, subs: SubscriptionService, audit?: AuditTrail): Promise<void> {
  /** Whether the client's subscription is on now (its URL is never recorded: it is the credential). */
  const isOn = async (customerId: string, clientId: string) => {
    try {
      await subs.get(customerId, clientId);
      return true;
    } catch {
      return false;
    }
  };
  const url = '/subscriptions/:client_id';
  const tags = ['subscriptions'];

  app.put<P>(url, {
    schema: {
      summary: 'Turn a client\'s subscription on, or rotate its URL (extension)',
      description: 'On: 200 with the subscription. Already on: a new URL is issued and the old one stops working at once. Takes no body.',
      tags,
      security: bearer,
      params: SubscriptionParams,
      response: responses({ 200: Subscription }, 400, 401, 413, 415, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => {
      noBody(request.body);
      const caller = callerOf(request);
      const clientId = request.params.client_id;
      const wasOn = await isOn(caller.customerId, clientId);
      const sub = await subs.enableOrRotate(caller.customerId, clientId);
      await audit?.record(caller.customerId, apiActor(caller), {
        action: wasOn ? 'subscription.rotate' : 'subscription.enable',
        target: { type: 'subscription', id: clientId },
        clientId,
        before: { enabled: wasOn },
        after: { enabled: true },
      });
      return sub;
    },
  });

  app.get<P>(url, {
    schema: {
      summary: 'Read a client\'s subscription, with its URL (extension)',
      tags,
      security: bearer,
      params: SubscriptionParams,
      response: responses({ 200: Subscription }, 400, 401, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => subs.get(callerOf(request).customerId, request.params.client_id),
  });

  app.delete<P>(url, {
    schema: {
      summary: 'Turn a client\'s subscription off: its URL stops working (extension)',
      tags,
      security: bearer,
      params: SubscriptionParams,
      response: responses({ 204: { type: 'null' } }, 400, 401, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request, reply) => {
      const caller = callerOf(request);
      const clientId = request.params.client_id;
      await subs.disable(caller.customerId, clientId);
      await audit?.record(caller.customerId, apiActor(caller), {
        action: 'subscription.disable',
        target: { type: 'subscription', id: clientId },
        clientId,
        before: { enabled: true },
        after: { enabled: false },
      });
      return reply.code(204).send();
    },
  });
}

const uaTable = USER_AGENT_TABLE.map((r) => `${r.clients} → ${r.format}`).join('; ');

/** At the root (outside /v2): no Authorization; the secret in the path is the credential. */
export async function subscriptionFeedRoutes(app: FastifyInstance, subs: SubscriptionService): Promise<void> {
  app.get<{ Params: { secret: string }; Querystring: { format?: string } }>('/sub/:secret', {
    schema: {
      summary: 'A client\'s subscription feed (extension; the URL secret is the credential)',
      description: `The client's usable sessions (not ended, not paused). Format: ?format= (singbox is read as sing-box), else from the User-Agent (${uaTable}; others → base64); a browser (Accept: text/html, no known app) gets a page with the usage, the expiry and an import button and QR code per app. Headers: subscription-userinfo, profile-update-interval, profile-title, content-disposition. Device limits (the client's max_devices): an app sending x-hwid (with x-device-os, x-ver-os, x-device-model) registers its device; while max_devices is set, a new device beyond it gets 200 with an empty body, x-hwid-max-devices-reached: true and an announce saying why, and an app sending no x-hwid gets the same with x-hwid-not-supported: true; a malformed x-hwid is 400. An unknown or revoked secret is 404; after too many of those an address (IPv6: its /64) gets 429 for them for the rest of the window; a valid secret is always answered.`,
      tags: ['subscriptions'],
      params: SubscriptionFeedParams,
      querystring: SubscriptionFeedQuery,
      response: {
        200: {
          description: 'base64 text, Xray or sing-box JSON, Mihomo YAML, or the HTML page',
          content: { 'text/plain': { schema: { type: 'string' } }, 'application/json': { schema: { type: 'object' } }, 'text/yaml': { schema: { type: 'string' } }, 'text/html': { schema: { type: 'string' } } },
        },
        400: ErrorRecord,
        404: ErrorRecord,
        429: ErrorRecord,
        500: ErrorRecord,
      },
      'x-extension': true,
    } as object,
    handler: async (request, reply) => {
      // The secret first: a valid one is always answered, whatever others at this address (a
      // NAT, a proxy) guessed. request.ip is the socket peer, or with --trust-proxy the client
      // a trusted proxy names in X-Forwarded-For.
      const row = await subs.findBySecret(request.params.secret);
      if (!row) {
        const address = request.ip;
        const blocked = subs.misses.blockedFor(address);
        if (blocked) return tooMany(request, reply, blocked, subs.misses.limit);
        const now = subs.misses.miss(address);
        if (now) return tooMany(request, reply, now, subs.misses.limit);
        return sendError(request, reply, new ApiError('subscription_not_found', 'No subscription at this address (unknown or revoked).', {}));
      }
      const asked = request.query.format;
      const ua = request.headers['user-agent'];
      // A browser (not a known app) opening the URL gets the page that explains it.
      if (asked === undefined && !isKnownClient(ua) && /\btext\/html\b/i.test(request.headers.accept ?? '')) {
        const html = await subs.page(row, `${subs.publicOrigin()}/sub/${request.params.secret}`);
        reply.headers({ 'content-security-policy': PAGE_CSP, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY' });
        return reply.code(200).type('text/html; charset=utf-8').send(html);
      }
      const format = asked === undefined ? formatForUserAgent(ua) : ((SUBSCRIPTION_FORMAT_ALIASES as Record<string, SubscriptionFormat>)[asked] ?? (asked as SubscriptionFormat));
      // An app that sends x-hwid registers its device; with max_devices set, a device beyond it
      // (or an app sending none) gets no links (subscriptions/devices.ts). A malformed x-hwid: 400.
      const verdict = await subs.devices.admit(row.customer_id, row.client_id, deviceOf(request.headers));
      const feed = await subs.feed(row, format, verdict);
      reply.headers(feed.headers);
      return reply.code(200).type(feed.contentType).send(feed.body);
    },
  });
}

function tooMany(request: Parameters<typeof sendError>[0], reply: Parameters<typeof sendError>[1], seconds: number, limit: number) {
  reply.header('retry-after', String(seconds));
  return sendError(
    request,
    reply,
    new ApiError('rate_limited', `Too many unknown subscription addresses from this address. Retry after ${seconds} s.`, {
      limit,
      retry_after_seconds: seconds,
    }),
  );
}
