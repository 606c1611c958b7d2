import type { FastifyInstance } from 'fastify';
import { Health } from '../contract/doctor.ts';
import { ApiError } from '../contract/errors.ts';
import { ServerInfo } from '../contract/schemas.ts';
import { PROBE_TIMEOUT_MS, within } from '../doctor/report.ts';
import { callerOf } from '../plugins/auth.ts';
import type { WriteRefusals } from '../plugins/errors.ts';
import type { Services } from '../services.ts';
import { bearer, responses } from './common.ts';

/** How long a write the database refused keeps an instance unhealthy, unless a write succeeds sooner. */
const REFUSAL_MS = 10_000;
const RETRY_AFTER_SECONDS = 5;

class Unhealthy extends ApiError {
  readonly retryAfterSeconds = RETRY_AFTER_SECONDS;
  constructor(reason: string, message: string) {
    super('service_unavailable', message, { reason, retry_after: RETRY_AFTER_SECONDS });
  }
}

/** GET /v2/health: whether this instance can serve, for a load balancer or a service manager. */
async function health(ctx: Services, refusals: WriteRefusals): Promise<{ status: 'ok' }> {
  const refused = refusals.recent(REFUSAL_MS);
  if (refused) throw new Unhealthy(refused.reason, `The database refused a write ${Math.round((Date.now() - refused.at) / 1000)} s ago (${refused.reason.replace('_', ' ')}); the instance cannot save what it is asked to.`);
  let settled = false;
  try {
    await within(ctx.data.schemaVersion().finally(() => (settled = true)), 'the database', PROBE_TIMEOUT_MS);
  } catch (err) {
    if (err instanceof ApiError) throw err; // the database unreachable: its own record, with Retry-After
    if (settled) throw new Unhealthy('database_error', 'The database failed a read.');
    throw new Unhealthy('database_timeout', `The database did not answer a read within ${PROBE_TIMEOUT_MS / 1000} s.`);
  }
  return { status: 'ok' };
}

export async function metaRoutes(app: FastifyInstance, ctx: Services, refusals: WriteRefusals): Promise<void> {
  app.get('/health', {
    config: { public: true },
    schema: {
      summary: 'Whether this instance can serve (extension)',
      description:
        'No token needed; rate-limited by address like every request without one. 200 when the database answered a read within 2 s and has refused no write ' +
        'in the last 10 s (a write that succeeds since clears it); otherwise 500 service_unavailable with details.reason (disk_full, io_error, read_only, ' +
        'database_timeout, database_error; none when the database is unreachable) and Retry-After. For load balancers and service managers.',
      tags: ['meta'],
      response: responses({ 200: Health }, 429, 500),
      'x-extension': true,
    } as object,
    handler: () => health(ctx, refusals),
  });

  app.get('/openapi.json', {
    config: { public: true },
    schema: { hide: true } as object,
    handler: async () => app.swagger(),
  });

  app.get('/server-info', {
    schema: {
      summary: 'Ports and addresses of this server (extension)',
      tags: ['meta'],
      security: bearer,
      response: responses({ 200: ServerInfo }, 401, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request) => ({
      version: ctx.settings.version,
      api_port: ctx.settings.link.wsPort,
      public_host: ctx.settings.link.publicHost,
      ws_path: ctx.settings.link.wsPath,
      vless_tcp_port: ctx.settings.link.tcpPort,
      proxy_port: ctx.settings.proxyPort,
      tls: ctx.settings.link.tls,
      tls_status: ctx.settings.tls,
      token: { customer: callerOf(request).customerName, role: callerOf(request).role },
    }),
  });
}
