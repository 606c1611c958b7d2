// The web UI: the built renderer served at `/` with a strict content security policy, and
// the single-page fallback: a GET for a path with no file extension, from a client that
// accepts HTML, answers index.html. API-looking paths never get the page: `/v<n>/...` (an
// old or future API version, or /v2 itself) and requests that do not accept HTML (API clients,
// curl) answer the not_found error record, as does every path without a built renderer.
// The page's own CSP <meta> is the Electron window's (connect-src 'none', see main/security.ts);
// here, where the page calls the API itself, it is served with connect-src 'self' instead.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import { sendError } from '../plugins/errors.ts';

/** Web mode's policy: the Electron window's (main/security.ts CSP) with connect-src 'self'. */
export const WEB_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const CSP_META = /(<meta\s+http-equiv="Content-Security-Policy"\s+content=")([^"]*)(")/i;

/** index.html as web mode serves it: its CSP meta replaced by WEB_CSP (added if it has none). */
export function webIndexHtml(html: string): string {
  return CSP_META.test(html)
    ? html.replace(CSP_META, (_m, open: string, _old: string, close: string) => open + WEB_CSP + close)
    : html.replace(/<head>/i, `<head><meta http-equiv="Content-Security-Policy" content="${WEB_CSP}" />`);
}

/** `/v1`, `/v2/...`, `/V3?x`: any API version's path, which the page must never answer. */
const API_PATH = /^\/v\d+(?:[/?#]|$)/i;

/** True when the Accept header names text/html (or application/xhtml+xml) with a q above 0. */
export function acceptsHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    if (type.trim() !== 'text/html' && type.trim() !== 'application/xhtml+xml') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

export async function registerWebUi(app: FastifyInstance, rendererDir: string | undefined): Promise<void> {
  if (!rendererDir || !existsSync(join(rendererDir, 'index.html'))) {
    app.setNotFoundHandler(async (request, reply) => sendError(request, reply, new ApiError('not_found', 'Not found.', {})));
    return;
  }
  // Imported only when there is a UI to serve: `--no-ui` and the desktop app's embedded server
  // (which pass no renderer folder) never load it and the send/mime/glob code it pulls in.
  const { default: fastifyStatic } = await import('@fastify/static');
  const page = webIndexHtml(readFileSync(join(rendererDir, 'index.html'), 'utf8'));
  const sendPage = (reply: FastifyReply) => reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(page);
  await app.register(async (web) => {
    web.addHook('onSend', async (_req, reply, payload) => {
      reply.header('content-security-policy', WEB_CSP);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      return payload;
    });
    // index.html never comes from the disk as is (its meta is the Electron policy): `/`,
    // `/index.html` and the fallback answer `page`, below.
    await web.register(fastifyStatic, { root: rendererDir, prefix: '/', wildcard: false, index: false, allowedPath: (path) => path !== '/index.html' });
    web.setNotFoundHandler(async (request, reply) => {
      if (request.method !== 'GET' && request.method !== 'HEAD') return sendError(request, reply, new ApiError('not_found', 'Not found.', {}));
      const path = request.url.split('?')[0];
      if (path === '/' || path === '/index.html') return sendPage(reply);
      if (!API_PATH.test(request.url) && !/\.[a-z0-9]+(\?|$)/i.test(request.url) && acceptsHtml(request.headers.accept)) {
        return sendPage(reply);
      }
      return sendError(request, reply, new ApiError('not_found', 'Not found.', {}));
    });
  });
}
