// Session use cases: creation, views with live counters, listing, pause and resume.
import { randomUUID } from 'node:crypto';
import { ApiError } from './contract/errors.ts';
import type { Session, SessionCreateRequest, SessionList, SessionListQuery, SessionStatusResponse } from './contract/schemas.ts';
import type { DataPlane } from './dataplane/api.ts';
import type { SessionRow } from './domain.ts';
import { buildConfiguration, buildLink, type LinkSettings } from './links.ts';
import type { Store } from './store/store.ts';
import type { ZoneCatalogue } from './zones/catalogue.ts';
import { isoNow } from './time.ts';

export class SessionService {
  private readonly store: Store;
  private readonly zones: ZoneCatalogue;
  private readonly link: LinkSettings;
  private readonly dataPlane: () => DataPlane | null;

  constructor(deps: { store: Store; zones: ZoneCatalogue; link: LinkSettings; dataPlane: () => DataPlane | null }) {
    this.store = deps.store;
    this.zones = deps.zones;
    this.link = deps.link;
    this.dataPlane = deps.dataPlane;
  }

  create(customerId: string, body: SessionCreateRequest): Session {
    const connectionType = body.connection_type ?? 'vless';
    const zone = this.zones.find(body.zone);
    if (!zone) throw new ApiError('zone_not_found', `Zone "${body.zone}" does not exist.`, { zone: body.zone });
    if (connectionType !== 'vless') {
      throw new ApiError('unsupported_connection_type', `Connection type "${connectionType}" is not supported; use "vless".`, {
        connection_type: connectionType,
        supported: ['vless'],
      });
    }
    if (!zone.has_active_nodes) {
      throw new ApiError('zone_unavailable', `Zone "${zone.code}" has no active nodes right now.`, { zone: zone.code });
    }
    const row = this.store.insertSession({
      id: randomUUID(),
      customer_id: customerId,
      client_id: body.client_id,
      zone: zone.code,
      reusable: body.reusable ?? false,
      created_at: isoNow(),
    });
    return this.view(row);
  }

  /** The row with counters and status from live connections, when the data plane has them. */
  private withLive(row: SessionRow): SessionRow {
    const live = this.dataPlane()?.live(row.id);
    if (!live) return row;
    return { ...row, status: live.status, uploaded_bytes: live.uploaded_bytes, downloaded_bytes: live.downloaded_bytes, duration: live.duration };
  }

  view(stored: SessionRow): Session {
    const row = this.withLive(stored);
    const configuration = buildConfiguration(row.id, this.link);
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

  get(customerId: string, id: string): SessionRow {
    const row = this.store.getSessionOf(customerId, id);
    if (!row) throw new ApiError('session_not_found', 'Session not found.', {});
    return row;
  }

  status(customerId: string, id: string): SessionStatusResponse {
    const row = this.withLive(this.get(customerId, id));
    return {
      client_id: row.client_id,
      status: row.status,
      duration: row.duration,
      uploaded_bytes: row.uploaded_bytes,
      downloaded_bytes: row.downloaded_bytes,
      paused: row.paused,
    };
  }

  list(customerId: string, q: SessionListQuery): SessionList {
    let before: number | undefined;
    if (q.cursor !== undefined) {
      const n = Number(Buffer.from(q.cursor, 'base64url').toString('utf8'));
      if (!Number.isSafeInteger(n) || n < 1) throw new ApiError('invalid_request', 'Invalid query parameter: cursor is not one this server issued.', { location: 'querystring', fields: [{ field: 'cursor', problem: 'is invalid' }] });
      before = n;
    }
    const { rows, nextSeq } = this.store.listSessions(customerId, { client_id: q.client_id, status: q.status, zone: q.zone }, q.limit ?? 50, before);
    return {
      sessions: rows.map((r) => this.view(r)),
      next_cursor: nextSeq === null ? null : Buffer.from(String(nextSeq), 'utf8').toString('base64url'),
    };
  }

  setPaused(customerId: string, id: string, paused: boolean): { session_id: string; paused: boolean } {
    const row = this.withLive(this.get(customerId, id));
    const action = paused ? 'paused' : 'resumed';
    if (!row.reusable) throw new ApiError('session_not_reusable', `Only reusable sessions can be ${action}.`, { session_id: id });
    if (row.status === 'ended') throw new ApiError('session_ended', `The session has ended and cannot be ${action}.`, { session_id: id });
    if (paused && row.paused) throw new ApiError('session_already_paused', 'The session is already paused.', { session_id: id });
    if (!paused && !row.paused) throw new ApiError('session_not_paused', 'The session is not paused.', { session_id: id });
    this.store.setPaused(id, paused);
    if (paused) this.dataPlane()?.pause(id);
    return { session_id: id, paused };
  }
}
