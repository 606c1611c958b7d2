// The OpenAPI 3.1 document, built by @fastify/swagger from the route schemas (served by the
// meta routes at /v2/openapi.json). Registered before the routes so that it sees them all.
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
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
}
