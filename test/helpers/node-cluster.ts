// A control plane on a throwaway PostgreSQL, its owner token and one data-plane node in
// process on 127.0.0.2 (zone br-sao, name sao-1) connected to it, with a TCP echo origin: the
// setup of the cluster tests that drive traffic through a node. Everything is real: the server
// (startServer), the node (runNode), PostgreSQL and the sockets.
import { startServer, type RunningServer } from '../../server/serve.ts';
import type { ServerOptions } from '../../server/http/config.ts';
import { runNode, type RunningNode } from '../../server/node/run.ts';
import { silentLogger } from '../../server/log.ts';
import { pushThroughEcho, startTcpEcho } from '../dataplane/helpers/targets.ts';
import { callApi } from './http.ts';
import { startPostgres, type PgServer } from './postgres.ts';
import { removeDir, tempDir, waitFor } from './server.ts';

export interface NodeCluster {
  pg: PgServer;
  srv: RunningServer;
  node: RunningNode;
  echo: Awaited<ReturnType<typeof startTcpEcho>>;
  owner: string;
  /** The API of the control plane as the owner. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>;
  /** Pushes n bytes through the node's VLESS TCP port to the echo origin as session `id`; resolves with the bytes echoed. */
  onNode(id: string, n: number): Promise<number>;
  /** Resolves once the node's zone is listed active. */
  nodeUp(): Promise<void>;
  /** Everything stopped and removed, the last made first. */
  close(): Promise<void>;
}

/** `name` names the data folders and the owner token; `server` adds to (or overrides) the server's options. */
export async function startNodeCluster(name: string, server: Partial<ServerOptions> = {}): Promise<NodeCluster> {
  const dirs: string[] = [];
  const pg = await startPostgres();
  const dir = tempDir(`vad-${name}-`);
  dirs.push(dir);
  const srv = await startServer({ dataDir: dir, database: pg.url(), port: 0, vlessTcpPort: null, proxyPort: null, rateLimit: { max: 100_000, windowMs: 60_000 }, ...server });
  const owner = (await srv.services.data.createToken(name, 'owner')).token;
  const added = await srv.services.data.addNode({ name: 'sao-1', zone: 'br-sao', public_host: '127.0.0.2' });
  const nodeDir = tempDir(`vad-${name}-node-`);
  dirs.push(nodeDir);
  const node = await runNode({ controls: [srv.origin], token: added.token, host: '127.0.0.2', port: 0, vlessTcpPort: 0, proxyPort: null, egress: 'allow-all', dataDir: nodeDir, log: silentLogger });
  const echo = await startTcpEcho();
  const call = (method: string, path: string, body?: unknown) => callApi(srv.baseUrl, owner, method, path, body);
  return {
    pg,
    srv,
    node,
    echo,
    owner,
    call,
    onNode: (id, n) => pushThroughEcho(node.ports.vless_tcp_port!, id, echo.port, n, '127.0.0.2'),
    nodeUp: () =>
      waitFor(async () => ((await call('GET', '/zones')).json.zones as Array<{ code: string; has_active_nodes: boolean }>).some((z) => z.code === 'br-sao' && z.has_active_nodes), 10_000, 'the node up'),
    close: async () => {
      await node.close();
      await srv.close();
      await echo.close();
      await pg.destroy();
      for (const d of dirs) removeDir(d);
    },
  };
}
