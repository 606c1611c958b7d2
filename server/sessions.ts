// Session use cases: creation (placed on a node of its zone), views with live counters,
// listing, pause and resume. They talk to the async store seam (store/control.ts), so the same
// code runs on SQLite and on PostgreSQL.
import { clusterSignals } from './cluster/node-channel.ts';
import { randomUUID } from 'node:crypto';
import { ApiError } from './contract/errors.ts';
import type { Session, SessionCreateRequest, SessionList, SessionListQuery, SessionStatusResponse } from './contract/schemas.ts';
import type { DataPlane } from './dataplane/api.ts';
import type { SessionRow } from './domain.ts';
import { buildConfiguration, buildLink, type LinkSettings } from './links.ts';
import type { ControlStore } from './store/control.ts';
import type { NodeInfo } from './store/store.ts';
import type { ZonePlacement } from './cluster/placement.ts';
import { isoNow } from './time.ts';

/**
 * A catalogue node's link: its public host and ports; transport as this server's. Without TLS:
 * `vpn-access node run` serves clear text only for now (on loopback and private addresses).
 */
export function nodeLink(local: LinkSettings, node: NodeInfo): LinkSettings {
  const ws = node.vless_ws_port ?? (node.vless_tcp_port === null ? local.wsPort : null);
  return {
    ...local,
    publicHost: node.public_host,
    network: ws === null ? 'tcp' : local.network,
    wsPort: ws ?? local.wsPort,
    tcpPort: node.vless_tcp_port,
    tls: false,
    // The node's certificate (once nodes have TLS) is not this server's: no pin, no own name.
    pcs: undefined,
    vcn: undefined,
    sni: undefined,
  };
}

export class SessionService {
  private readonly store: ControlStore;
  private readonly zones: ZonePlacement;
  private readonly link: LinkSettings;
  private readonly dataPlane: () => DataPlane | null;

  constructor(deps: { store: ControlStore; zones: ZonePlacement; link: LinkSettings; dataPlane: () => DataPlane | null }) {
    this.store = deps.store;
    this.zones = deps.zones;
    this.link = deps.link;
    this.dataPlane = deps.dataPlane;
  }

  async create(customerId: string, body: SessionCreateRequest): Promise<Session> {
    const connectionType = body.connection_type ?? 'vless';
    const zone = this.zones.find(body.zone);
    if (!zone) throw new ApiError('zone_not_found', `Zone "${body.zone}" does not exist.`, { zone: body.zone });
    if (connectionType !== 'vless') {
      throw new ApiError('unsupported_connection_type', `Connection type "${connectionType}" is not supported; use "vless".`, {
        connection_type: connectionType,
        supported: ['vless'],
      });
    }
    const placement = await this.zones.place(zone);
    if (!placement) {
      throw new ApiError('zone_unavailable', `Zone "${zone.code}" has no active nodes right now.`, { zone: zone.code });
    }
    const row = await this.store.insertSession({
      id: randomUUID(),
      customer_id: customerId,
      client_id: body.client_id,
      zone: zone.code,
      reusable: body.reusable ?? false,
      created_at: isoNow(),
    });
    if (placement.kind === 'node') await this.store.placeSession(row.id, placement.node.id);
    return this.view(row, placement.kind === 'node' ? placement.node : undefined);
  }

  /** The row with counters and status from live connections, when the data plane has them. */
  private withLive(row: SessionRow): SessionRow {
    const live = this.dataPlane()?.live(row.id);
    if (!live) return row;
    return { ...row, status: live.status, uploaded_bytes: live.uploaded_bytes, downloaded_bytes: live.downloaded_bytes, duration: live.duration };
  }

  /** The API view of a stored row; `node` is the catalogue node it is placed on (none: local). */
  view(stored: SessionRow, node?: NodeInfo): Session {
    const row = this.withLive(stored);
    const configuration = buildConfiguration(row.id, node ? nodeLink(this.link, node) : this.link);
    return {
      id: row.id,
      connection_type: 'vless',
      zone: row.zone,
      configuration,
      configuration_link: buildLink(configuration, `${row.zone} ${row.client_id}`),
      reusable: row.reusable,
      created_at: row.created_at,
      client_id: row.client_id,
      status: row.status,
      paused: row.paused,
      duration: row.duration,
      uploaded_bytes: row.uploaded_bytes,
      downloaded_bytes: row.downloaded_bytes,
    };
  }

  /** Views of several rows, each pointing at the node it is placed on. */
  async views(rows: SessionRow[]): Promise<Session[]> {
    const placed = rows.length ? await this.store.placedNodes(rows.map((r) => r.id)) : [];
    const bySession = new Map(placed.map((p) => [p.session_id, p]));
    return rows.map((r) => this.view(r, bySession.get(r.id)));
  }

  async get(customerId: string, id: string): Promise<SessionRow> {
    const row = await this.store.getSessionOf(customerId, id);
    if (!row) throw new ApiError('session_not_found', 'Session not found.', {});
    return row;
  }

  async getView(customerId: string, id: string): Promise<Session> {
    return (await this.views([await this.get(customerId, id)]))[0];
  }

  async status(customerId: string, id: string): Promise<SessionStatusResponse> {
    const row = this.withLive(await this.get(customerId, id));
    return {
      client_id: row.client_id,
      status: row.status,
      duration: row.duration,
      uploaded_bytes: row.uploaded_bytes,
      downloaded_bytes: row.downloaded_bytes,
      paused: row.paused,
    };
  }

  async list(customerId: string, q: SessionListQuery): Promise<SessionList> {
    let before: number | undefined;
    if (q.cursor !== undefined) {
      const n = Number(Buffer.from(q.cursor, 'base64url').toString('utf8'));
      if (!Number.isSafeInteger(n) || n < 1) throw new ApiError('invalid_request', 'Invalid query parameter: cursor is not one this server issued.', { location: 'querystring', fields: [{ field: 'cursor', problem: 'is invalid' }] });
      before = n;
    }
    const { rows, nextSeq } = await this.store.listSessions(customerId, { client_id: q.client_id, status: q.status, zone: q.zone }, q.limit ?? 50, before);
    return {
      sessions: await this.views(rows),
      next_cursor: nextSeq === null ? null : Buffer.from(String(nextSeq), 'utf8').toString('base64url'),
    };
  }

  /**
   * Stores the pause flag and cuts the session's connections on this process's data plane. On
   * PostgreSQL the store's write also notifies every other instance (vad_sessions), whose data
   * planes cut theirs (server/cluster/local-view.ts).
   */
  async setPaused(customerId: string, id: string, paused: boolean): Promise<{ session_id: string; paused: boolean }> {
    const row = this.withLive(await this.get(customerId, id));
    const action = paused ? 'paused' : 'resumed';
    if (!row.reusable) throw new ApiError('session_not_reusable', `Only reusable sessions can be ${action}.`, { session_id: id });
    if (row.status === 'ended') throw new ApiError('session_ended', `The session has ended and cannot be ${action}.`, { session_id: id });
    if (paused && row.paused) throw new ApiError('session_already_paused', 'The session is already paused.', { session_id: id });
    if (!paused && !row.paused) throw new ApiError('session_not_paused', 'The session is not paused.', { session_id: id });
    await this.store.setPaused(id, paused);
    if (paused) this.dataPlane()?.pause(id);
    // Nodes carrying the session hear of it at once (server/cluster/node-channel.ts).
    clusterSignals.emit('changed');
    return { session_id: id, paused };
  }
}
