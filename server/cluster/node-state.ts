// The state the control plane sends a data-plane node ({type:'state'}, node-channel.ts): the
// sessions placed on it, their customers' limits and counter sums, the recorded bases of periodic
// caps, the node's shares of cluster limits (shares.ts), its zone and the geo relays (geo.ts).
import type { NodeInspect } from './node-inspect.ts';
import type { ClientControl, LimitScope, LimitValues, SessionRow, ZoneInfo } from '../domain.ts';
import { baseKeyOf, periodOf } from '../contract/period.ts';
import { mergeClientLimits } from '../contract/client-limits.ts';
import { wallClock } from '../time.ts';
import type { NodeInfo } from '../store/store.ts';
import type { Metrics } from '../metrics.ts';
import type { UsageHistory } from '../usage/history.ts';
import { GrantPace, nodeShares, type WireShare } from './shares.ts';
import { relayTargets, type RelayTarget, type ServeGeoRoutes } from './geo.ts';
import type { RepairDeps } from './crash-repair.ts';

/** What the channel uses of the server's services (services.ts builds them). */
export interface NodeChannelDeps extends RepairDeps {
  metrics: Pick<Metrics, 'openConnections' | 'registry' | 'moved'>;
  geo: Pick<ServeGeoRoutes, 'nodes' | 'entries'>;
  zones: { list(): ZoneInfo[] };
  usage: Pick<UsageHistory, 'add'> | null;
  /** Usage thresholds (server/quota/thresholds.ts): told the sessions a report added bytes to. */
  thresholds?: { touch(sessionId: string): void } | null;
  /** Support's questions to the connected nodes (node-inspect.ts); absent: none asked. */
  inspect?: NodeInspect;
}

export interface NodeState {
  type: 'state';
  sessions: SessionRow[];
  limits: Record<string, Partial<Record<LimitScope, LimitValues | null>>>;
  /** Counter sums by customer id, and by `customer\u0000client`. */
  sums: Record<string, { up: number; down: number }>;
  /** Clients (extension): the record of each client (`customer\u0000client`) the owner set something for. */
  clients?: Record<string, ClientControl>;
  /** Periodic caps: the recorded bases of the current periods, by quotaBaseKey. */
  bases?: Record<string, { up: number; down: number }>;
  /**
   * The node's share of each limited customer (key its id) and client (`customer\u0000client`):
   * byte grants and speed shares (shares.ts). A grant's `left` is counted from the node's
   * reports up to `shareSeq`: the node takes off what it moved after that.
   */
  shares?: Record<string, WireShare>;
  shareSeq?: number;
  /** The geo proxy (geo.ts): the node's own zone, the zone catalogue, and the other up nodes' relays with grants for this node. */
  zone?: string;
  zones?: ZoneInfo[];
  relays?: RelayTarget[];
  /** Who may use this node's relay listener: the catalogue's node ids and `serve` (geo.ts). */
  relay_entries?: string[];
  /** The node's public host in the catalogue: its self-signed certificate is made for it. */
  public_host?: string;
}

const SCOPES: LimitScope[] = ['global', 'client', 'session'];

export const quotaBaseKey = (customerId: string, scope: LimitScope, entityId: string, periodKey: number) => `${customerId}\u0000${scope}\u0000${entityId}\u0000${periodKey}`;

/** A customer's three limits records as the node gets them (null: not set). */
export async function limitsOf(data: NodeChannelDeps['data'], customerId: string): Promise<NodeState['limits'][string]> {
  const values = await data.getAllLimits(customerId);
  return Object.fromEntries(SCOPES.map((scope) => [scope, values[scope] ?? null]));
}

/** The limits and counter sums of every customer (and client) with a session on the node. */
async function limitsAndSums(data: NodeChannelDeps['data'], sessions: SessionRow[]): Promise<Required<Pick<NodeState, 'limits' | 'sums' | 'clients'>>> {
  const limits: NodeState['limits'] = {};
  const sums: NodeState['sums'] = {};
  const clients: Record<string, ClientControl> = {};
  for (const s of sessions) {
    if (!limits[s.customer_id]) {
      limits[s.customer_id] = await limitsOf(data, s.customer_id);
      const c = await data.sumCounters(s.customer_id);
      sums[s.customer_id] = { up: c.uploaded_bytes, down: c.downloaded_bytes };
    }
    const key = `${s.customer_id}\u0000${s.client_id}`;
    if (!sums[key]) {
      const c = await data.sumCounters(s.customer_id, s.client_id);
      sums[key] = { up: c.uploaded_bytes, down: c.downloaded_bytes };
      const control = await data.getClientControl(s.customer_id, s.client_id);
      if (control) clients[key] = control;
    }
  }
  return { limits, sums, clients };
}

/** Periodic caps: the bases of the current periods of every entity a session here counts for. */
async function basesOf(data: NodeChannelDeps['data'], sessions: SessionRow[], { limits, clients }: Required<Pick<NodeState, 'limits' | 'clients'>>, now: number): Promise<NonNullable<NodeState['bases']>> {
  const bases: NonNullable<NodeState['bases']> = {};
  for (const s of sessions) {
    for (const scope of SCOPES) {
      const values = limits[s.customer_id]?.[scope] ?? undefined;
      const period = periodOf(scope === 'client' ? mergeClientLimits(values, clients[`${s.customer_id}\u0000${s.client_id}`]) : values, now);
      if (!period) continue;
      const periodKey = baseKeyOf(period);
      const entity = scope === 'global' ? s.customer_id : scope === 'client' ? s.client_id : s.id;
      const key = quotaBaseKey(s.customer_id, scope, entity, periodKey);
      if (key in bases) continue;
      const base = await data.quotaBase(s.customer_id, scope, entity, periodKey);
      if (base) bases[key] = base;
    }
  }
  return bases;
}

/** The state for one node now. */
export async function buildState(services: NodeChannelDeps, node: NodeInfo, pace: GrantPace): Promise<NodeState> {
  const { data } = services;
  const sessions = await data.sessionsOnNode(node.id);
  const { limits, sums, clients } = await limitsAndSums(data, sessions);
  const now = wallClock();
  const bases = await basesOf(data, sessions, { limits, clients }, now);
  // Cluster limits: the last report applied for the node is read before the grants, so what
  // they count as used includes at least the reports up to it (the node subtracts the rest).
  const shareSeq = (await data.nodeReportSeq(node.id)) ?? 0;
  const shares = await nodeShares(data, node.id, sessions, { limits, clients }, bases, quotaBaseKey, pace, now);
  const relays = relayTargets(services.geo.nodes, node.id, node.id);
  return {
    type: 'state',
    sessions,
    limits,
    sums,
    zone: node.zone,
    public_host: node.public_host,
    zones: services.zones.list(),
    relays,
    relay_entries: services.geo.entries,
    ...(Object.keys(bases).length ? { bases } : {}),
    ...(Object.keys(clients).length ? { clients } : {}),
    ...(Object.keys(shares).length ? { shares, shareSeq } : {}),
  };
}
