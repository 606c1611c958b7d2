import type { FastifyInstance } from 'fastify';
import { ServerInfo } from '../contract/schemas.ts';
import { callerOf } from '../plugins/auth.ts';
import type { Services } from '../services.ts';
import { bearer, responses } from './common.ts';

export async function metaRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
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
