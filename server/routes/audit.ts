// GET /v2/audit (extension): the audit trail of the caller's customer, newest first,
// filtered by session, client, action, token and time, with cursor pagination. Owner and agent
// tokens alike (support staff answer "who changed this and when" without a database shell), but
// an agent sees only the actions agents may take (server/audit/redact.ts); webhook URLs are shown
// masked; tokens appear by id and role only.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import { AUDIT_ACTIONS, AuditPage, AuditQuery } from '../contract/audit.ts';
import { callerOf } from '../plugins/auth.ts';
import { AGENT_VISIBLE_ACTIONS, shownEntry } from '../audit/redact.ts';
import type { Services } from '../services.ts';
import { bearer, responses } from './common.ts';

export async function auditRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  app.get<{ Querystring: AuditQuery }>('/audit', {
    schema: {
      summary: 'Who changed what, and when (extension)',
      description:
        'Extension: every change made through the API or the command line (sessions created, paused, resumed; limits updated or deleted; ' +
        'tokens created or revoked; subscriptions enabled, rotated or disabled, and their settings changed; webhooks created, updated, deleted or disabled by the server), with the token id and role that made it and the values before and after. ' +
        'Agent tokens see only the actions agents may take (session.*, and subscription.enable, rotate and disable). Webhook URLs are shown as scheme://host[:port]/*** (their path and query may be a credential).',
      tags: ['audit'],
      security: bearer,
      querystring: AuditQuery,
      response: responses({ 200: AuditPage }, 400, 401, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request): Promise<AuditPage> => {
      const { customerId, role } = callerOf(request);
      const q = request.query;
      if (q.action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(q.action)) {
        throw new ApiError('invalid_request', `Unknown action "${q.action}"; one of ${AUDIT_ACTIONS.join(', ')}.`, { field: 'action' });
      }
      let beforeId: number | undefined;
      if (q.cursor !== undefined) {
        beforeId = /^\d{1,15}$/.test(q.cursor) ? Number(q.cursor) : NaN;
        if (!Number.isSafeInteger(beforeId) || beforeId < 1) throw new ApiError('invalid_request', 'The cursor is not one this server gave.', { field: 'cursor' });
      }
      if (q.from !== undefined && q.to !== undefined && Date.parse(q.from) >= Date.parse(q.to)) {
        throw new ApiError('invalid_request', '`from` must be before `to`.', { field: 'from' });
      }
      const iso = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
      const page = await ctx.data.auditEntries(
        customerId,
        {
          session_id: q.session_id,
          client_id: q.client_id,
          action: q.action,
          actions: role === 'owner' ? undefined : AGENT_VISIBLE_ACTIONS,
          actor_token_id: q.actor,
          from: iso(q.from),
          to: iso(q.to),
        },
        q.limit ?? 50,
        beforeId,
      );
      return { entries: page.rows.map(shownEntry), next_cursor: page.nextId === null ? null : String(page.nextId) };
    },
  });
}
