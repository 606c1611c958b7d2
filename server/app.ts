// buildServer(options): the whole service as a fastify instance that does not listen yet.
// The desktop app, the command line and every test build the server through this function.
// This is the composition root only; each part lives in its own file:
//   http/config.ts     options → resolved settings (every default)
//   services.ts        store (backend/), zones, data plane, session service, use cases, webhooks
//   http/body.ts       JSON bodies and validation
//   plugins/errors.ts  the one error format
//   http/openapi.ts    the OpenAPI document
//   http/v2-guard.ts   rate limit, auth, 404/405 in front of /v2 (order documented there)
//   routes/*.ts        the /v2 operations (and the subscription feed, /sub/<secret>)
//   tls/index.ts       the certificate of every listener, and what links say about it
//   http/web-ui.ts     the built renderer and its single-page fallback
//   http/retention.ts  event retention
import { createRequire } from 'node:module';
import Fastify, { type FastifyInstance } from 'fastify';
import { BODY_LIMIT, installBodyParsing } from './http/body.ts';
import { resolveConfig, type ResolvedConfig, type ServerOptions } from './http/config.ts';
import { registerOpenApi } from './http/openapi.ts';
import { startEventRetention } from './http/retention.ts';
import { V2Guard } from './http/v2-guard.ts';
import { registerWebUi } from './http/web-ui.ts';
import { registerMetrics } from './http/metrics.ts';
import { clientError, installErrorHandling, type WriteRefusals } from './plugins/errors.ts';
import { eventRoutes } from './routes/events.ts';
import { limitRoutes } from './routes/limits.ts';
import { doctorRoutes } from './routes/doctor.ts';
import { clientRoutes } from './routes/clients.ts';
import { metaRoutes } from './routes/meta.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { zoneRoutes } from './routes/zones.ts';
import { usageRoutes } from './routes/usage.ts';
import { auditRoutes } from './routes/audit.ts';
import { createNodeChannel } from './cluster/node-channel.ts';
import { createServices, type Services } from './services.ts';
import { startExpirySweep } from './sessions.ts';
import { startQuotaJob } from './quota/job.ts';
import { subscriptionFeedRoutes, subscriptionRoutes } from './routes/subscriptions.ts';
import { subscriptionSettingsRoutes } from './routes/subscription-settings.ts';
import { deviceRoutes } from './routes/devices.ts';
import { supportRoutes } from './routes/support.ts';
import { openTls, wireTls, type TlsCertificates } from './tls/index.ts';
import { silentLogger } from './log.ts';
import { redactIds } from './time.ts';
import { webhookRoutes } from './routes/webhooks.ts';

export type { ServerOptions } from './http/config.ts';

// Read relative to this file: the main-process bundle points import.meta.url at server/app.ts
// (scripts/build-main.ts), so this path must stay here.
const pkg = createRequire(import.meta.url)('../package.json') as { version: string };

export interface BuiltServer {
  app: FastifyInstance;
  services: Services;
}

export async function buildServer(opts: ServerOptions): Promise<BuiltServer> {
  const tls = await openTls({ ...opts, publicHost: opts.publicHost ?? '127.0.0.1', log: opts.logger ?? silentLogger });
  const config = resolveConfig(opts, pkg.version, tls);
  // On SQLite, the folder's lock and the repair of what a crash left behind come first (backend/sqlite.ts).
  const services = await createServices(opts, config, tls);
  try {
    return { app: await assemble(opts, config, tls, services), services };
  } catch (err) {
    // Nothing the services started outlives a server that could not be built.
    await services.close().catch(() => {});
    throw err;
  }
}

/** How much of a request's URL the request log keeps: a line stays readable, and a long URL cannot flood the log. */
export const LOGGED_URL_CHARS = 300;

/** A URL as the request log shows it: credentials and ids redacted, then cut to LOGGED_URL_CHARS with the count of what was left out. */
export function loggedUrl(url: string): string {
  const shown = redactIds(url);
  return shown.length <= LOGGED_URL_CHARS ? shown : `${shown.slice(0, LOGGED_URL_CHARS)}… (${shown.length - LOGGED_URL_CHARS} more characters)`;
}

/** The HTTP server on top of the services: the routes, the upgrades, the jobs. */
async function assemble(opts: ServerOptions, config: ResolvedConfig, tls: TlsCertificates, services: Services): Promise<FastifyInstance> {
  const guard = new V2Guard();
  const app = createFastify(opts, config, tls, guard);
  installBodyParsing(app);
  const refusals = installErrorHandling(app, services.log);
  if (opts.logRequests) {
    app.addHook('onResponse', (request, reply, done) => {
      services.log.info(`${request.method} ${loggedUrl(request.url)} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)}ms`);
      done();
    });
  }
  await registerRoutes(app, opts, config, services, guard, refusals);
  wireTls(tls, app, services.dataPlane, config.settings.link);
  await startBackground(app, config, services);
  return app;
}

/** The fastify instance: body limit, proxies trusted, router options, time-outs, TLS when configured. */
function createFastify(opts: ServerOptions, config: ResolvedConfig, tls: TlsCertificates, guard: V2Guard): FastifyInstance {
  const timeouts = config.httpTimeouts;
  // Node's own deadlines (http.createServer / https.createServer options): see HttpTimeouts.
  const serverTimeouts = { headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: timeouts.checkIntervalMs };
  return Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    forceCloseConnections: true,
    // request.ip from X-Forwarded-For only when the socket peer is one of these proxies.
    trustProxy: opts.trustProxy?.length ? opts.trustProxy : false,
    return503OnClosing: false,
    // Ids longer than the schema's 200 reach validation (400); beyond this, frameworkErrors answers.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // Malformed percent-encoding and over-long path parameters fail in the router, before any
    // hook: answer them with the error record too, not fastify's own body.
    frameworkErrors: (err, request, reply) => void guard.frameworkError(err, request, reply),
    // What Node's HTTP parser refuses before a request exists: the error record too.
    clientErrorHandler: clientError,
    // Slow and idle clients (http/config.ts HttpTimeouts); event streams and ws upgrades are not cut.
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionTimeout: timeouts.idleMs,
    ...(tls.current ? { https: { cert: tls.current.cert, key: tls.current.key, ...serverTimeouts } } : { http: serverTimeouts }),
  }) as unknown as FastifyInstance;
}

/** OpenAPI, metrics, the /v2 routes behind the token guard, the subscription feeds and the web UI. */
async function registerRoutes(app: FastifyInstance, opts: ServerOptions, config: ResolvedConfig, services: Services, guard: V2Guard, refusals: WriteRefusals): Promise<void> {
  const { subscriptions, webhooks } = services;
  await registerOpenApi(app);
  // Before the routes: its onResponse hook measures every request (server/http/metrics.ts).
  await registerMetrics(app, services.metrics, opts.metricsToken);
  await guard.register(app, {
    tokens: services.tokenLookup,
    rateLimit: config.rateLimit,
    routes: async (v2) => {
      await zoneRoutes(v2, services);
      await sessionRoutes(v2, services);
      await eventRoutes(v2, services);
      await limitRoutes(v2, services);
      await clientRoutes(v2, services);
      await metaRoutes(v2, services, refusals);
      await doctorRoutes(v2, services, { egress: config.dataPlane.egress ?? 'public-only', zonesFile: opts.zonesFile });
      await usageRoutes(v2, services);
      await auditRoutes(v2, services);
      await subscriptionRoutes(v2, subscriptions, services.audit);
      await subscriptionSettingsRoutes(v2, subscriptions, services.audit);
      await deviceRoutes(v2, subscriptions.devices, services.audit);
      await supportRoutes(v2, services.support);
      if (webhooks) await webhookRoutes(v2, webhooks, services.audit);
    },
  });
  // Outside /v2 and without a token: the URL's secret is the credential (server/subscriptions).
  await subscriptionFeedRoutes(app, subscriptions);
  await registerWebUi(app, opts.rendererDir);
}

/** The node channel and the upgrades, the background jobs and webhooks, and what closing stops. */
async function startBackground(app: FastifyInstance, config: ResolvedConfig, services: Services): Promise<void> {
  const { dataPlane, log, webhooks } = services;
  // Data-plane nodes (`vpn-access node run`) connect here; the local data plane takes the rest.
  const nodeChannel = createNodeChannel(services);
  app.server.on('upgrade', (req, socket, head) => {
    if (nodeChannel.handleUpgrade(req, socket, head)) return;
    if (!dataPlane?.handleUpgrade(req, socket, head)) socket.destroy();
  });

  // The jobs join what the services own: closing releases them first, then the rest.
  const { owned } = services;
  owned.add(startExpirySweep(services.data, log));
  const quotaJob = startQuotaJob(services.data, log);
  owned.add(() => quotaJob.stop());
  services.thresholds.start();
  owned.add(startEventRetention(services.data, config.eventRetentionMs));
  if (webhooks) {
    await webhooks.start();
    owned.add(() => webhooks.close());
  }
  app.addHook('preClose', async () => {
    services.streams.closeAll();
    nodeChannel.close();
  });
  app.addHook('onClose', () => services.close());
}
