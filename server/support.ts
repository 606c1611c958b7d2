// Support's view of what the data planes are doing: a session's live connections, and the recent
// refusals of a session or a client, gathered on read from this instance's data plane (node
// `local`) and every node connected to this instance (cluster/node-inspect.ts). Nothing here is
// stored: each data plane keeps its own, bounded, in memory (dataplane/support.ts).
import type { ConnectionView, DataPlane, RefusalDigest } from './dataplane/api.ts';
import type { ConnectionList, RefusalList } from './contract/support.ts';
import type { SessionService } from './sessions.ts';
import type { ControlStore } from './store/control.ts';

/** The answers of the connected nodes (NodeInspect), as support needs them. */
export interface NodeAsker {
  ask(
    query: { what: 'connections'; session: string } | { what: 'refusals'; session: string } | { what: 'refusals'; customer: string; client: string },
  ): Promise<{ answers: Array<{ node: string; connections?: ConnectionView[]; refusals?: RefusalDigest }>; unanswered: string[] }>;
  /** Whether the node's channel is open on this instance. */
  has(nodeId: string): boolean;
}

export interface SupportDeps {
  sessions: Pick<SessionService, 'get'>;
  dataPlane: () => DataPlane | null;
  nodes: NodeAsker;
  data: Pick<ControlStore, 'placementOf' | 'getNode'>;
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
    const local = this.deps.dataPlane()?.connectionsOf?.(sessionId) ?? [];
    const { answers, unanswered } = await this.deps.nodes.ask({ what: 'connections', session: sessionId });
    const connections = [
      ...local.map((c) => ({ ...c, node: LOCAL })),
      ...answers.flatMap((a) => (a.connections ?? []).map((c) => ({ ...c, node: a.node }))),
    ].sort((a, b) => a.opened_at.localeCompare(b.opened_at));
    return { connections, unanswered_nodes: [...unanswered, ...(await this.placedElsewhere(sessionId, unanswered))] };
  }

  /** The session's node when its channel is on another instance (PostgreSQL): it was not asked, so it is named. */
  private async placedElsewhere(sessionId: string, named: string[]): Promise<string[]> {
    const nodeId = await this.deps.data.placementOf(sessionId);
    if (!nodeId || this.deps.nodes.has(nodeId)) return [];
    const node = await this.deps.data.getNode(nodeId);
    return node && !named.includes(node.name) ? [node.name] : [];
  }

  /** The session's recent refusals on every data plane (404 session_not_found for another customer's). */
  async sessionRefusals(customerId: string, sessionId: string): Promise<RefusalList> {
    await this.deps.sessions.get(customerId, sessionId);
    const local = this.deps.dataPlane()?.refusalsOf?.({ sessionId });
    const merged = merge(local, await this.deps.nodes.ask({ what: 'refusals', session: sessionId }));
    merged.unanswered_nodes.push(...(await this.placedElsewhere(sessionId, merged.unanswered_nodes)));
    return merged;
  }

  /** The recent refusals of the customer's client (none known: empty). */
  async clientRefusals(customerId: string, clientId: string): Promise<RefusalList> {
    const local = this.deps.dataPlane()?.refusalsOf?.({ customerId, clientId });
    return merge(local, await this.deps.nodes.ask({ what: 'refusals', customer: customerId, client: clientId }));
  }
}

function merge(local: RefusalDigest | undefined, asked: Awaited<ReturnType<NodeAsker['ask']>>): RefusalList {
  const parts = [...(local ? [{ node: LOCAL, refusals: local }] : []), ...asked.answers];
  const counts: Record<string, number> = {};
  const refusals: RefusalList['refusals'] = [];
  for (const part of parts) {
    if (!part.refusals) continue;
    for (const r of part.refusals.refusals) refusals.push({ ...r, node: part.node });
    for (const [reason, n] of Object.entries(part.refusals.counts_last_hour)) counts[reason] = (counts[reason] ?? 0) + n;
  }
  refusals.sort((a, b) => b.at.localeCompare(a.at));
  return { refusals: refusals.slice(0, REFUSALS_LISTED), counts_last_hour: counts, unanswered_nodes: asked.unanswered };
}
