import type { FastifyInstance } from 'fastify';
import { ZoneList } from '../contract/schemas.ts';
import type { Services } from '../services.ts';
import { bearer, responses } from './common.ts';

export async function zoneRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  app.get('/zones', {
    schema: {
      summary: 'List the network zones',
      tags: ['zones'],
      security: bearer,
      response: responses({ 200: ZoneList }, 400, 401, 429, 500),
    },
    handler: async () => ({
      zones: (await ctx.placement.list()).map((z) => ({ name: z.name, code: z.code, has_active_nodes: z.has_active_nodes, country: z.country, cities: z.cities })),
    }),
  });
}
