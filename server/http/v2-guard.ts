// The guard in front of every /v2 route. In this order:
//   1. rate limit (onRequest, per token, or per address without a valid token) → 429
//   2. authentication and role (onRequest, added to each route after the limiter, so 401 and
//      403 answers carry the rate headers too) → 401 / 403
//   3. routing: a path no route has → 404; a path with routes but not for this method → 405
//      with Allow (both counted by the limiter first)
//   4. schema validation of path, query and body → 400, then the route's handler.
// Requests the router cannot even parse (malformed percent-encoding, over-long parameters)
// fail before any hook; frameworkError answers them with the error record, limited too.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { ApiError } from '../contract/errors.ts';
import { authenticate, extractToken, type TokenFinder } from '../plugins/auth.ts';
import { sendError, toApiError } from '../plugins/errors.ts';
import { redactIds } from '../time.ts';

type Limiter = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

export class V2Guard {
  /** The /v2 rate limiter, for the answers the router gives before any hook runs (set at register). */
  private limiter: Limiter | undefined;

  /** For fastify's frameworkErrors: the error record, after the limiter for /v2 paths. */
  readonly frameworkError = async (err: Error, request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    let error = toApiError(err);
    if (this.limiter && (request.raw.url ?? '').startsWith('/v2/')) {
      // Such a request has no route: give the limiter an empty route config to read.
      const routed = Object.create(request, { routeOptions: { value: { config: {} } } }) as FastifyRequest;
      try {
        await this.limiter(routed, reply);
      } catch (limited) {
        error = toApiError(limited as Error);
      }
    }
    sendError(request, reply, error);
  };

  /** Registers the /v2 prefix with the guard, then `routes` inside it. */
  async register(
    app: FastifyInstance,
    opts: { tokens: TokenFinder; rateLimit: { max: number; windowMs: number }; routes: (v2: FastifyInstance) => Promise<void> },
  ): Promise<void> {
    await app.register(
      async (v2) => {
        const { max, windowMs } = opts.rateLimit;
        const tokens = opts.tokens;
        await v2.register(rateLimit, {
          global: true,
          max,
          timeWindow: windowMs,
          hook: 'onRequest',
          // Counted per token; requests without a valid token (none, malformed, unknown, revoked)
          // are counted per address, so made-up tokens cannot each get a fresh allowance.
          // A store failure here (the database gone) still counts the request, per address; the
          // auth hook then meets the same failure and answers 500 (logged), with the limit headers.
          keyGenerator: (req: FastifyRequest) => {
            const header = req.headers.authorization;
            const token = extractToken(header);
            let found: ReturnType<TokenFinder['find']> | undefined;
            try {
              found = token ? tokens.find(token) : undefined;
              // The auth hook takes this look-up over instead of making its own.
              if (token) req.tokenFound = { header, token, found };
            } catch {
              found = undefined;
            }
            const key = (info: { id: string } | undefined) => (info ? `t:${info.id}` : `ip:${req.ip}`);
            // On PostgreSQL the look-up is a Promise (the limiter awaits it); a database that is
            // away counts the request per address rather than failing in the limiter.
            return found instanceof Promise ? found.then(key, () => `ip:${req.ip}`) : key(found);
          },
          errorResponseBuilder: (_req, ctx) =>
            new ApiError('rate_limited', `Too many requests: at most ${ctx.max} per ${Math.round(windowMs / 1000)} s. Retry after ${ctx.after}.`, {
              limit: ctx.max,
              retry_after_seconds: Math.ceil(ctx.ttl / 1000),
            }),
        });
        v2.decorateRequest('auth', null);
        v2.decorateRequest('tokenFound', null);
        // Added per route after the rate-limit hook, so 401 and 403 answers carry the rate headers too.
        const known: { method: string; pattern: RegExp }[] = [];
        v2.addHook('onRoute', (route) => {
          const hooks = route.onRequest ? (Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]) : [];
          route.onRequest = [...hooks, authenticate(tokens, route.config)];
          const pattern = new RegExp('^' + route.url.replace(/:[^/]+/g, '[^/]+').replace(/\/$/, '') + '/?$');
          for (const method of Array.isArray(route.method) ? route.method : [route.method]) known.push({ method, pattern });
        });
        this.limiter = v2.rateLimit() as unknown as Limiter;
        v2.setNotFoundHandler({ preHandler: v2.rateLimit() }, async (request, reply) => {
          const path = request.url.split('?')[0];
          const allowed = [...new Set(known.filter((route) => route.pattern.test(path)).map((route) => route.method))];
          if (allowed.length) {
            reply.header('allow', allowed.join(', '));
            return sendError(request, reply, new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(' or ')}.`, { allow: allowed }));
          }
          return sendError(request, reply, new ApiError('not_found', `No route ${request.method} ${redactIds(path)}.`, {}));
        });
        await opts.routes(v2);
      },
      { prefix: '/v2' },
    );
  }
}
