// GET /metrics: this instance's Prometheus metrics (server/metrics.ts), in the text format, and
// the hook that measures every answered request.
//
// Protection: with a metrics token (`--metrics-token`, VPN_ACCESS_METRICS_TOKEN, ServerOptions
// metricsToken) a scrape must send it as `Authorization: Bearer <token>` (compared in constant
// time; it is not an API token and grants nothing else); without one, only clients on this
// machine (a loopback address) may scrape, and never through a reverse proxy: a proxy on this
// machine connects from loopback on behalf of anyone, so a request carrying forwarding headers
// (Forwarded, X-Forwarded-*, X-Real-IP) is refused. Either refusal is the contract's error
// record. The socket address is used, never --trust-proxy's client address.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import type { Metrics } from '../metrics.ts';

export const METRICS_PATH = '/metrics';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** 127.0.0.0/8, ::1 and IPv4-mapped loopback. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

/** Headers a reverse proxy adds: their presence means the socket peer is not the client. */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip'];

export async function registerMetrics(app: FastifyInstance, metrics: Metrics, token: string | undefined): Promise<void> {
  const expected = token ? digest(token) : undefined;
  const allowed = (request: FastifyRequest): void => {
    if (!expected) {
      if (!isLoopback(request.socket.remoteAddress)) {
        throw new ApiError('forbidden', 'Metrics are served to this machine only; set a metrics token (--metrics-token) to scrape them from elsewhere.');
      }
      const forwarded = FORWARDING_HEADERS.find((h) => request.headers[h] !== undefined);
      if (forwarded) {
        throw new ApiError('forbidden', `Metrics are not served through a proxy (the request carries ${forwarded}); set a metrics token (--metrics-token) to scrape them that way.`);
      }
      return;
    }
    const header = request.headers.authorization ?? '';
    const given = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
    if (!given || !timingSafeEqual(digest(given), expected)) {
      throw new ApiError('unauthorized', 'GET /metrics needs the metrics token as "Authorization: Bearer <token>".');
    }
  };

  // A callback hook: no promise per request.
  app.addHook('onResponse', (request, reply, done) => {
    // The route's pattern (never the raw URL: ids would make a series per session).
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.request(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.get(METRICS_PATH, {
    schema: {
      summary: 'Prometheus metrics of this instance (extension)',
      description:
        'Extension: the Prometheus text format (0.0.4). Requests by route and status with durations, bytes and open connections by zone and node, ' +
        'admission refusals by reason, event-stream subscribers and delivery lag, control-store latency. Without a metrics token only loopback ' +
        'clients are answered, and no request carrying forwarding headers (Forwarded, X-Forwarded-*, X-Real-IP: a reverse proxy\'s) (403 otherwise); with one (--metrics-token) a scrape sends it as a bearer token (401 otherwise). Not an API token.',
      tags: ['metrics'],
      'x-extension': true,
    } as object,
  }, async (request, reply) => {
    allowed(request);
    const text = await metrics.text();
    return reply.type(metrics.contentType).header('cache-control', 'no-store').send(text);
  });
}
