// GET /v2/doctor (extension, owner tokens): the checks of `vpn-access doctor` the server can run
// about itself: its listeners reached at its public host, the certificate it serves against the
// pin its links carry, the public host, the egress policy, its database and nodes, its zones.
import type { FastifyInstance } from 'fastify';
import { DoctorReport } from '../contract/doctor.ts';
import type { PortSpec } from '../doctor/ports.ts';
import { runDoctor } from '../doctor/run.ts';
import { databaseClock, storeProbe } from '../doctor/store.ts';
import type { Services } from '../services.ts';
import { bearer, responses } from './common.ts';

export interface DoctorOptions {
  egress: 'public-only' | 'lan' | 'allow-all';
  zonesFile?: string;
}

/** The server's listeners as its links and server-info name them. */
function ownPorts(ctx: Services): PortSpec[] {
  const { link, proxyPort } = ctx.settings;
  const ports: PortSpec[] = [{ id: 'api', name: 'API (and VLESS over ws)', option: '--port', port: link.wsPort, tls: link.tls }];
  if (link.tcpPort !== null) ports.push({ id: 'vless-tcp', name: 'VLESS TCP', option: '--vless-tcp-port', port: link.tcpPort, tls: link.tls });
  if (proxyPort !== null) ports.push({ id: 'proxy', name: 'Proxy', option: '--proxy-port', port: proxyPort, tls: link.tls });
  return ports;
}

export async function doctorRoutes(app: FastifyInstance, ctx: Services, opts: DoctorOptions): Promise<void> {
  app.get('/doctor', {
    config: { ownerOnly: true },
    schema: {
      summary: 'Check what makes clients fail before they connect (extension)',
      description: 'The report of `vpn-access doctor --json` for the checks the server can run about itself. The clock is compared with PostgreSQL\'s in cluster mode; on a data folder it is left out (one machine, one clock).',
      tags: ['meta'],
      security: bearer,
      response: responses({ 200: DoctorReport }, 401, 403, 429, 500),
      'x-extension': true,
    } as object,
    handler: async () => {
      const s = ctx.tls.status;
      const database = storeProbe(ctx.data, ctx.database === 'sqlite' ? 'the data folder\'s database' : 'the PostgreSQL database');
      return runDoctor({
        publicHost: ctx.settings.link.publicHost,
        bindHost: ctx.settings.link.publicHost,
        running: true,
        ports: ownPorts(ctx),
        tls: {
          enabled: s.enabled,
          mode: s.mode,
          reason: s.reason,
          source: s.source,
          cert: ctx.tls.certificate?.x509,
          pin: ctx.settings.link.pcs ?? null,
          fingerprint: s.fingerprint_sha256,
        },
        egress: opts.egress,
        database,
        // PostgreSQL's clock (another machine's, as a rule): this instance's leases and grants are
        // judged against it. Left out when it does not answer (the database check says why).
        clock: (await databaseClock(database, 'PostgreSQL')) ?? undefined,
        zonesFile: opts.zonesFile,
      });
    },
  });
}
