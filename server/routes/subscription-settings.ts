// /v2/subscription-settings (extension): what every subscription feed and page of the customer
// carries besides the sessions (support link, profile web page, announcement). Owner and agent
// tokens read it; only an owner changes it, and each change is audited.
import type { FastifyInstance } from 'fastify';
import { SubscriptionSettings, SubscriptionSettingsUpdate } from '../contract/subscriptions.ts';
import { apiActor, type AuditTrail } from '../audit/trail.ts';
import { callerOf } from '../plugins/auth.ts';
import type { SubscriptionSettingsPatch } from '../store/repos/subscription-settings.ts';
import type { SubscriptionService } from '../subscriptions/service.ts';
import { bearer, responses } from './common.ts';

/** Under the /v2 prefix: auth, token rate limit and tenancy come from that context. */
export async function subscriptionSettingsRoutes(app: FastifyInstance, subs: SubscriptionService, audit?: AuditTrail): Promise<void> {
  const url = '/subscription-settings';
  const tags = ['subscriptions'];

  app.get(url, {
    schema: {
      summary: 'Read what every subscription feed carries besides the sessions (extension)',
      description: 'The support link, profile web page and announcement of every feed and page of the customer; null: not set.',
      tags,
      security: bearer,
      response: responses({ 200: SubscriptionSettings }, 401, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => subs.settings(callerOf(request).customerId),
  });

  app.patch<{ Body: SubscriptionSettingsPatch }>(url, {
    config: { ownerOnly: 'subscription settings' },
    schema: {
      summary: 'Change what every subscription feed carries besides the sessions (extension)',
      description:
        'Only the fields sent change; null clears one. Every format then answers with the `support-url`, `profile-web-page-url` and `announce` (`base64:` and the UTF-8 text in base64) headers of the fields set, and the page a browser gets shows the announcement and a "Get help" link.',
      tags,
      security: bearer,
      body: SubscriptionSettingsUpdate,
      response: responses({ 200: SubscriptionSettings }, 400, 401, 403, 413, 415, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => {
      const caller = callerOf(request);
      const before = await subs.settings(caller.customerId);
      const after = await subs.updateSettings(caller.customerId, request.body);
      await audit?.record(caller.customerId, apiActor(caller), {
        action: 'subscription.settings',
        target: { type: 'subscription_settings', id: caller.customerId },
        before: fieldsOf(before),
        after: fieldsOf(after),
      });
      return after;
    },
  });
}

/** The three fields, without the time (the audit entry has its own). */
function fieldsOf(s: { support_url: string | null; profile_web_page_url: string | null; announce: string | null }) {
  return { support_url: s.support_url, profile_web_page_url: s.profile_web_page_url, announce: s.announce };
}
