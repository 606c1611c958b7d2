// The web UI: the built renderer served at `/` with a strict content security policy, and
// the single-page fallback (a GET for a path with no file extension answers index.html).
// Without a built renderer, every path outside /v2 answers the not_found error record.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';
import { ApiError } from '../contract/errors.ts';
import { sendError } from '../plugins/errors.ts';

const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

export async function registerWebUi(app: FastifyInstance, rendererDir: string | undefined): Promise<void> {
  if (!rendererDir || !existsSync(join(rendererDir, 'index.html'))) {
    app.setNotFoundHandler(async (request, reply) => sendError(request, reply, new ApiError('not_found', 'Not found.', {})));
    return;
  }
  await app.register(async (web) => {
    web.addHook('onSend', async (_req, reply, payload) => {
      reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
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
}
