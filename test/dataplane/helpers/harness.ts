// Starts a data plane over in-memory deps with an http server whose 'upgrade' goes to
// handleUpgrade (what the real API server does).
import { createServer, type Server } from 'node:http';
import { createDataPlane } from '../../../server/dataplane/index.ts';
import type { DataPlane, DataPlaneConfig, DataPlaneDeps } from '../../../server/dataplane/api.ts';
import { MemoryDeps } from './memory-deps.ts';
import type { VlessConfiguration } from './v2ray.ts';

export interface Harness {
  mem: MemoryDeps;
  dp: DataPlane;
  http: Server;
  wsPort: number;
  vlessTcpPort: number;
  proxyPort: number;
  config(id: string, network: 'ws' | 'tcp'): VlessConfiguration;
  close(): Promise<void>;
}

/** `geo`: the cluster's routes, when the test gives the data plane exits beyond itself. */
export async function startHarness(config: Partial<DataPlaneConfig> = {}, geo?: DataPlaneDeps['geo']): Promise<Harness> {
  const mem = new MemoryDeps(config);
  const dp = createDataPlane(geo ? { ...mem.deps, geo } : mem.deps);
  const ports = await dp.start();
  const http = createServer((_req, res) => { res.statusCode = 404; res.end(); });
  http.on('upgrade', (req, socket, head) => {
    if (!dp.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const wsPort = (http.address() as { port: number }).port;
  return {
    mem,
    dp,
    http,
    wsPort,
    vlessTcpPort: ports.vlessTcpPort ?? 0,
    proxyPort: ports.proxyPort ?? 0,
    config: (id, network) => network === 'ws'
      ? { protocol: 'vless', address: '127.0.0.1', port: wsPort, id, encryption: 'none', network: 'ws', path: mem.deps.config.wsPath, security: 'none' }
      : { protocol: 'vless', address: '127.0.0.1', port: ports.vlessTcpPort ?? 0, id, encryption: 'none', network: 'tcp', security: 'none' },
    async close() {
      await dp.close();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
