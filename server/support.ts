// Support's view of what the data planes are doing: a session's live connections, and the recent
// refusals of a session or a client, gathered on read from this instance's data plane (node
// `local`), every node connected to this instance (cluster/node-inspect.ts) and, on PostgreSQL,
// every other control-plane instance with its own data plane and nodes (cluster/instance-ask.ts).
// Nothing here is stored: each data plane keeps its own, bounded, in memory (dataplane/support.ts).
import type { ConnectionView, DataPlane, RefusalDigest } from './dataplane/api.ts';
import type { ConnectionList, RefusalList } from './contract/support.ts';
import type { SessionService } from './sessions.ts';
import type { ControlStore } from './store/control.ts';

/** What is asked: connections of a session, refusals of a session, or refusals of a client. */
export type SupportQuery = { what: 'connections'; session: string } | { what: 'refusals'; session: string } | { what: 'refusals'; customer: string; client: string };

/** One data plane's answer: `local` (an instance's own) or a node's name. */
export interface DataPlaneAnswer {
  node: string;
  connections?: ConnectionView[];
  refusals?: RefusalDigest;
}

/** The answers of the connected nodes (NodeInspect), as support needs them. */
export interface NodeAsker {
  ask(query: SupportQuery, timeoutMs?: number): Promise<{ answers: DataPlaneAnswer[]; unanswered: string[] }>;
  /** Whether the node's channel is open on this instance. */
  has(nodeId: string): boolean;
}

/** The other control-plane instances (InstanceAsk, PostgreSQL): each one's data planes, and those silent. */
export interface InstanceAsker {
  ask(customerId: string, query: SupportQuery): Promise<{ answers: Array<{ parts: DataPlaneAnswer[]; unanswered: string[] }>; unanswered: string[] }>;
}

export interface SupportDeps {
  sessions: Pick<SessionService, 'get'>;
  dataPlane: () => DataPlane | null;
  nodes: NodeAsker;
  data: Pick<ControlStore, 'placementOf' | 'getNode'>;
  /** The other instances; null on SQLite (one process). */
  instances: () => InstanceAsker | null;
}

/** Every data plane's answers, the nodes and the instances not heard from. */
interface Gathered {
  parts: DataPlaneAnswer[];
  unanswered_nodes: string[];
  unanswered_instances: string[];
}

const LOCAL = 'local';
const REFUSALS_LISTED = 100;

export class SupportService {
  private readonly deps: SupportDeps;

  constructor(deps: SupportDeps) {
    this.deps = deps;
  }

  /** The session's open connections on every data plane (404 session_not_found for another customer's). */
  async connections(customerId: string, sessionId: string): Promise<ConnectionList> {
    await this.deps.sessions.get(customerId, sessionId);
    const g = await this.everywhere(customerId, { what: 'connections', session: sessionId });
    const seen = new Set<string>();
    const connections = g.parts
      .flatMap((a) => (a.connections ?? []).map((c) => ({ ...c, node: a.node })))
      .filter((c) => !seen.has(c.id) && seen.add(c.id))
      .sort((a, b) => a.opened_at.localeCompare(b.opened_at));
    await this.placedElsewhere(sessionId, g);
    return { connections, unanswered_nodes: g.unanswered_nodes, unanswered_instances: g.unanswered_instances };
  }

  /** The session's recent refusals on every data plane (404 session_not_found for another customer's). */
  async sessionRefusals(customerId: string, sessionId: string): Promise<RefusalList> {
    await this.deps.sessions.get(customerId, sessionId);
    const g = await this.everywhere(customerId, { what: 'refusals', session: sessionId });
    await this.placedElsewhere(sessionId, g);
    return merge(g);
  }

  /** The recent refusals of the customer's client (none known: empty). */
  async clientRefusals(customerId: string, clientId: string): Promise<RefusalList> {
    return merge(await this.everywhere(customerId, { what: 'refusals', customer: customerId, client: clientId }));
  }

  /**
   * What this instance holds: its own data plane and its connected nodes (each given `timeoutMs`).
   * Also what it answers another instance's question with (only for the customer asked about).
   */
  async gather(customerId: string, query: SupportQuery, timeoutMs?: number): Promise<{ parts: DataPlaneAnswer[]; unanswered: string[] }> {
    const dp = this.deps.dataPlane();
    const local: DataPlaneAnswer[] = [];
    if (dp && query.what === 'connections') local.push({ node: LOCAL, connections: dp.connectionsOf?.(query.session) ?? [] });
    else if (dp?.refusalsOf) {
      local.push({ node: LOCAL, refusals: dp.refusalsOf('session' in query ? { sessionId: query.session } : { customerId, clientId: query.client }) });
    }
    const asked = await this.deps.nodes.ask(query, timeoutMs);
    return { parts: [...local, ...asked.answers], unanswered: asked.unanswered };
  }

  /** This instance's data planes and, at the same time, every other instance's. */
  private async everywhere(customerId: string, query: SupportQuery): Promise<Gathered> {
    const instances = this.deps.instances();
    const [here, there] = await Promise.all([this.gather(customerId, query), instances ? instances.ask(customerId, query) : { answers: [], unanswered: [] }]);
    return {
      parts: [...here.parts, ...there.answers.flatMap((a) => a.parts)],
      unanswered_nodes: [...here.unanswered, ...there.answers.flatMap((a) => a.unanswered)],
      unanswered_instances: there.unanswered,
    };
  }

  /** The session's node when no instance that answered carries its channel: it was not asked, so it is named. */
  private async placedElsewhere(sessionId: string, g: Gathered): Promise<void> {
    const nodeId = await this.deps.data.placementOf(sessionId);
    if (!nodeId || this.deps.nodes.has(nodeId)) return;
    const node = await this.deps.data.getNode(nodeId);
    if (node && !g.unanswered_nodes.includes(node.name) && !g.parts.some((p) => p.node === node.name)) g.unanswered_nodes.push(node.name);
  }
}

function merge(g: Gathered): RefusalList {
  const counts: Record<string, number> = {};
  const refusals: RefusalList['refusals'] = [];
  for (const part of g.parts) {
    if (!part.refusals) continue;
    for (const r of part.refusals.refusals) refusals.push({ ...r, node: part.node });
    for (const [reason, n] of Object.entries(part.refusals.counts_last_hour)) counts[reason] = (counts[reason] ?? 0) + n;
  }
  refusals.sort((a, b) => b.at.localeCompare(a.at));
  return { refusals: refusals.slice(0, REFUSALS_LISTED), counts_last_hour: counts, unanswered_nodes: g.unanswered_nodes, unanswered_instances: g.unanswered_instances };
}
