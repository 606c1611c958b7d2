// buildServer(options): the whole service as a fastify instance that does not listen yet.
// The desktop app, the command line and every test build the server through this function.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import fastifyStatic from '@fastify/static';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ApiError } from './contract/errors.ts';
import type { DataPlane, DataPlaneConfig, DataPlaneDeps, Logger } from './dataplane/api.ts';
import { createDataPlane } from './dataplane/index.ts';
import { EventBus } from './events/bus.ts';
import type { SseOptions } from './events/sse.ts';
import type { LinkSettings } from './links.ts';
import { silentLogger } from './log.ts';
import { authenticate, extractToken, TokenCache } from './plugins/auth.ts';
import { installErrorHandling, sendError, toApiError } from './plugins/errors.ts';
import { eventRoutes } from './routes/events.ts';
import { limitRoutes } from './routes/limits.ts';
import { metaRoutes } from './routes/meta.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { zoneRoutes } from './routes/zones.ts';
import { type Services, StreamRegistry } from './services.ts';
import { takeDataDir } from './store/recovery.ts';
import { SessionService } from './sessions.ts';
import { openDatabase } from './store/db.ts';
import { Store } from './store/store.ts';
import { redactIds } from './time.ts';
import { ZoneCatalogue } from './zones/catalogue.ts';

const pkg = createRequire(import.meta.url)('../package.json') as { version: string };
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export const BODY_LIMIT = 64 * 1024;

export interface ServerOptions {
  dataDir: string;
  zonesFile?: string;
  /** Requests per token in a fixed window. Default 600 per 60 s. */
  rateLimit?: { max: number; windowMs: number };
  /** Host name or address written into session configurations. Default 127.0.0.1. */
  publicHost?: string;
  /** Port written into ws configurations until the server listens (then the real port). */
  publicPort?: number;
  /** Network of the configuration handed out: `ws` on the API port (default) or raw `tcp`. */
  linkNetwork?: 'ws' | 'tcp';
  wsPath?: string;
  /** PEM certificate and key: TLS on the API port (and so on VLESS over ws), the TCP inbound and the proxy. */
  tls?: { cert: string; key: string };
  /** Bind address of the data-plane listeners (the API's own is chosen at listen). */
  host?: string;
  vlessTcpPort?: number | null;
  proxyPort?: number | null;
  statsIntervalMs?: number;
  heartbeatIntervalMs?: number;
  /** Egress policy of the data plane; default 'public-only' (see server/dataplane/egress.ts). */
  egress?: 'public-only' | 'lan' | 'allow-all';
  sse?: Partial<SseOptions>;
  /** Days events are kept (at least 7). */
  eventRetentionDays?: number;
  logger?: Logger;
  /** One readable log line per request. */
  logRequests?: boolean;
  /** Folder of the built renderer, served at `/`. */
  rendererDir?: string;
  /** Replaces the data plane (tests of the control plane alone pass `null`). */
  dataPlane?: ((deps: DataPlaneDeps) => DataPlane) | null;
}

export interface BuiltServer {
  app: FastifyInstance;
  services: Services;
}

function validatorCompilers() {
  // Bodies: no coercion, every error reported, unknown fields rejected (not silently removed).
  const bodyAjv = new Ajv({ allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: true, strict: false });
  // Query strings and path parameters arrive as text: coerce them.
  const textAjv = new Ajv({ allErrors: true, coerceTypes: true, removeAdditional: false, useDefaults: true, strict: false });
  addFormats(bodyAjv);
  addFormats(textAjv);
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);
}

export async function buildServer(opts: ServerOptions): Promise<BuiltServer> {
  const log = opts.logger ?? silentLogger;
  const store = new Store(openDatabase(opts.dataDir));
  const zones = ZoneCatalogue.load(opts.zonesFile);
  const bus = new EventBus(store);
  // The folder's lock (one server per folder) and the repair of what a crash left behind.
  const releaseDataDir = takeDataDir(opts.dataDir, store, (e) => void bus.publish(e), log);
  const link: LinkSettings = {
    publicHost: opts.publicHost ?? '127.0.0.1',
    network: opts.linkNetwork ?? 'ws',
    wsPort: opts.publicPort ?? 8787,
    tcpPort: null,
    wsPath: opts.wsPath ?? '/vless',
    tls: Boolean(opts.tls),
  };
  const settings = {
    version: pkg.version,
    link,
    proxyPort: null as number | null,
    logRequests: Boolean(opts.logRequests),
    sse: { retryMs: 3000, keepAliveMs: 15_000, maxBufferedBytes: 1024 * 1024, replayBatch: 500, ...opts.sse },
  };
  const dataPlaneConfig: DataPlaneConfig = {
    host: opts.host ?? '127.0.0.1',
    vlessTcpPort: opts.vlessTcpPort === undefined ? 0 : opts.vlessTcpPort,
    proxyPort: opts.proxyPort === undefined ? 0 : opts.proxyPort,
    wsPath: link.wsPath,
    tls: opts.tls,
    statsIntervalMs: opts.statsIntervalMs ?? 5000,
    heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 30_000,
    egress: opts.egress ?? 'public-only',
  };
  const factory = opts.dataPlane === undefined ? createDataPlane : opts.dataPlane;
  const dataPlane = factory
    ? factory({
        store,
        events: { publish: (e) => void bus.publish(e) },
        zones: { list: () => zones.list() },
        log,
        config: dataPlaneConfig,
      })
    : null;
  const sessions = new SessionService({ store, zones, link, dataPlane: () => dataPlane });
  const services: Services = {
    store,
    bus,
    zones,
    sessions,
    dataPlane,
    log,
    settings,
    streams: new StreamRegistry(store, settings.sse),
    tokens: { create: ({ customer, role }) => store.createToken(customer, role).token },
  };

  // The /v2 rate limiter, for the answers the router gives before any hook runs (set below).
  let v2Limiter: ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) | undefined;
  const frameworkError = async (err: Error, request: FastifyRequest, reply: FastifyReply) => {
    let error = toApiError(err);
    if (v2Limiter && (request.raw.url ?? '').startsWith('/v2/')) {
      // Such a request has no route: give the limiter an empty route config to read.
      const routed = Object.create(request, { routeOptions: { value: { config: {} } } }) as FastifyRequest;
      try {
        await v2Limiter(routed, reply);
      } catch (limited) {
        error = toApiError(limited as Error);
      }
    }
    sendError(request, reply, error);
  };

  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    forceCloseConnections: true,
    return503OnClosing: false,
    // Ids longer than the schema's 200 reach validation (400); beyond this, frameworkErrors answers.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // Malformed percent-encoding and over-long path parameters fail in the router, before any
    // hook: answer them with the error record too, not fastify's own body.
    frameworkErrors: (err, request, reply) => void frameworkError(err, request, reply),
    ...(opts.tls ? { https: { cert: opts.tls.cert, key: opts.tls.key } } : {}),
  }) as unknown as FastifyInstance;
  app.setValidatorCompiler(validatorCompilers());
  installErrorHandling(app, log);

  // Bodies are JSON only; an empty body counts as no body (PATCH pause/resume send none).
  // fastify tests the regular expression against the whole header, parameters included
  // (`application/json; charset=utf-8`), so they are allowed after the media type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(/^application\/([a-z0-9.+-]*\+)?json(\s*;.*)?$/i, { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new ApiError('invalid_request', 'The request body is not valid JSON.', { location: 'body' }), undefined);
    }
  });

  if (opts.logRequests) {
    app.addHook('onResponse', async (request, reply) => {
      log.info(`${request.method} ${redactIds(request.url)} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)}ms`);
    });
  }

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'VPN Access Desk API',
        version: '1.0',
        description: 'Customer VPN access service, API version v2. Operations and fields marked x-extension are additions to the interface document.',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
    },
  });

  await app.register(
    async (v2) => {
      const { max, windowMs } = opts.rateLimit ?? { max: 600, windowMs: 60_000 };
      const tokens = new TokenCache(store);
      await v2.register(rateLimit, {
        global: true,
        max,
        timeWindow: windowMs,
        hook: 'onRequest',
        // Counted per token; requests without a valid token (none, malformed, unknown, revoked)
        // are counted per address, so made-up tokens cannot each get a fresh allowance.
        keyGenerator: (req: FastifyRequest) => {
          const token = extractToken(req.headers.authorization);
          const info = token ? tokens.find(token) : undefined;
          return info ? `t:${info.id}` : `ip:${req.ip}`;
        },
        errorResponseBuilder: (_req, ctx) =>
          new ApiError('rate_limited', `Too many requests: at most ${ctx.max} per ${Math.round(windowMs / 1000)} s. Retry after ${ctx.after}.`, {
            limit: ctx.max,
            retry_after_seconds: Math.ceil(ctx.ttl / 1000),
          }),
      });
      v2.decorateRequest('auth', null);
      // Added per route after the rate-limit hook, so 401 and 403 answers carry the rate headers too.
      const auth = authenticate(tokens);
      const known: { method: string; pattern: RegExp }[] = [];
      v2.addHook('onRoute', (route) => {
        const hooks = route.onRequest ? (Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]) : [];
        route.onRequest = [...hooks, auth];
        const pattern = new RegExp('^' + route.url.replace(/:[^/]+/g, '[^/]+').replace(/\/$/, '') + '/?$');
        for (const m of Array.isArray(route.method) ? route.method : [route.method]) known.push({ method: m, pattern });
      });
      v2Limiter = v2.rateLimit() as unknown as typeof v2Limiter;
      v2.setNotFoundHandler({ preHandler: v2.rateLimit() }, async (request, reply) => {
        const path = request.url.split('?')[0];
        const allowed = [...new Set(known.filter((k) => k.pattern.test(path)).map((k) => k.method))];
        if (allowed.length) {
          reply.header('allow', allowed.join(', '));
          return sendError(request, reply, new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allowed.join(' or ')}.`, { allow: allowed }));
        }
        return sendError(request, reply, new ApiError('not_found', `No route ${request.method} ${redactIds(path)}.`, {}));
      });
      await zoneRoutes(v2, services);
      await sessionRoutes(v2, services);
      await eventRoutes(v2, services);
      await limitRoutes(v2, services);
      await metaRoutes(v2, services);
    },
    { prefix: '/v2' },
  );

  const rendererDir = opts.rendererDir;
  if (rendererDir && existsSync(join(rendererDir, 'index.html'))) {
    await app.register(async (web) => {
      web.addHook('onSend', async (_req, reply, payload) => {
        reply.header(
          'content-security-policy',
          "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
        );
        reply.header('x-content-type-options', 'nosniff');
        reply.header('referrer-policy', 'no-referrer');
        return payload;
      });
      await web.register(fastifyStatic, { root: rendererDir, prefix: '/', wildcard: false, index: ['index.html'] });
      web.setNotFoundHandler(async (request, reply) => {
        if (request.method === 'GET' && !request.url.startsWith('/v2') && !/\.[a-z0-9]+(\?|$)/i.test(request.url)) {
          return reply.sendFile('index.html');
        }
        return sendError(request, reply, new ApiError('not_found', 'Not found.', {}));
      });
    });
  } else {
    app.setNotFoundHandler(async (request, reply) => sendError(request, reply, new ApiError('not_found', 'Not found.', {})));
  }

  if (dataPlane) {
    app.server.on('upgrade', (req, socket, head) => {
      if (!dataPlane.handleUpgrade(req, socket, head)) socket.destroy();
    });
  }

  const retentionMs = Math.max(7, opts.eventRetentionDays ?? 14) * 86_400_000;
  const prune = () => store.pruneEvents(new Date(Date.now() - retentionMs).toISOString());
  prune();
  const pruneTimer = setInterval(prune, 3_600_000);
  pruneTimer.unref();

  app.addHook('preClose', async () => {
    services.streams.closeAll();
  });
  app.addHook('onClose', async () => {
    clearInterval(pruneTimer);
    if (dataPlane) await dataPlane.close();
    store.db.close();
    releaseDataDir();
  });

  return { app, services };
}
