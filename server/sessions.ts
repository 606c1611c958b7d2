// Session use cases: creation (placed on a node of its zone), views with live counters,
// listing, pause and resume. They talk to the async store seam (store/control.ts), so the same
// code runs on SQLite and on PostgreSQL.
import { NODE_WS_PATH } from './cluster/paths.ts';
import { randomUUID } from 'node:crypto';
import { ApiError } from './contract/errors.ts';
import type { Session, SessionCreateRequest, SessionList, SessionListQuery, SessionStatusResponse } from './contract/schemas.ts';
import type { DataPlane } from './dataplane/api.ts';
import type { ClientControl, LimitValues, Logger, SessionRow } from './domain.ts';
import { baseKeyOf, isPeriodic, periodOf, type Period } from './contract/period.ts';
import { clientBlock, mergeClientLimits, withUsageReset } from './contract/client-limits.ts';
import { recordQuotaBases } from './quota/job.ts';
import { buildConfiguration, buildLink, type LinkSettings } from './links.ts';
import { LINK_ALPN, LINK_FP } from './tls/index.ts';
import type { ControlStore } from './store/control.ts';
import { groupedCreations } from './store/group-commit.ts';
import type { Creation } from './store/repos/placements.ts';
import type { AllLimits, AuditInsert, NewSession, NodeInfo, SessionStatusRead } from './store/store.ts';
import type { ZonePlacement } from './cluster/placement.ts';
import type { ChangeFeed } from './events/changes.ts';
import { isoNow, wallClock } from './time.ts';

type Quota = { over_quota?: true; over_quota_until?: string };
interface PeriodicScope { scope: 'session' | 'client' | 'global'; values: LimitValues; period: Period }
const SCOPES = ['session', 'client', 'global'] as const;

/**
 * A catalogue node's link: its public host and ports, transport as this server's, and TLS as the
 * node reported it (`vpn-access node run --tls`): the sni is the node's public host, and its
 * self-signed certificate is pinned by `pcs` (a CA-signed one is verified the usual way).
 */
export function nodeLink(local: LinkSettings, node: NodeInfo): LinkSettings {
  const ws = node.vless_ws_port ?? (node.vless_tcp_port === null ? local.wsPort : null);
  return {
    ...local,
    publicHost: node.public_host,
    network: ws === null ? 'tcp' : local.network,
    wsPort: ws ?? local.wsPort,
    wsPath: NODE_WS_PATH,
    tcpPort: node.vless_tcp_port,
    tls: node.tls,
    fp: node.tls ? LINK_FP : undefined,
    alpn: node.tls ? LINK_ALPN : undefined,
    pcs: (node.tls && node.tls_pcs) || undefined,
    // The node's certificate is not this server's: its own name (sni defaults to the public host).
    vcn: undefined,
    sni: undefined,
  };
}

/** The furthest a session's expires_at may be. */
const MAX_LIFETIME_MS = 10 * 365 * 86_400_000;

/**
 * When a new session ends by itself: the expires_at it names (in the future, at most ten years
 * ahead), else now plus the session limits' default_lifetime_seconds, else never (null).
 */
function expiryOf(sessionLimits: LimitValues | undefined, requested: string | undefined): string | null {
  const now = wallClock();
  if (requested !== undefined) {
    const at = Date.parse(requested);
    if (!Number.isFinite(at) || at <= now) {
      throw new ApiError('invalid_request', 'expires_at must be a time in the future.', { field: 'expires_at', value: requested });
    }
    if (at > now + MAX_LIFETIME_MS) throw new ApiError('invalid_request', 'expires_at may be at most ten years ahead.', { field: 'expires_at', value: requested });
    return new Date(at).toISOString();
  }
  const lifetime = sessionLimits?.default_lifetime_seconds;
  return lifetime ? new Date(now + lifetime * 1000).toISOString() : null;
}

export class SessionService {
  private readonly store: ControlStore;
  private readonly zones: ZonePlacement;
  private readonly link: LinkSettings;
  private readonly dataPlane: () => DataPlane | null;
  private readonly changes: ChangeFeed;
  /** Creations asked for together share one commit (store/group-commit.ts). */
  private readonly insert: (...args: Creation) => Promise<SessionRow>;

  constructor(deps: { store: ControlStore; zones: ZonePlacement; link: LinkSettings; dataPlane: () => DataPlane | null; changes: ChangeFeed }) {
    this.changes = deps.changes;
    this.store = deps.store;
    this.zones = deps.zones;
    this.link = deps.link;
    this.dataPlane = deps.dataPlane;
    this.insert = groupedCreations(deps.store);
  }

  /** `audit`: the record of the creation, written in the session's own transaction. */
  async create(customerId: string, body: SessionCreateRequest, audit?: (row: NewSession) => AuditInsert): Promise<Session> {
    const connectionType = body.connection_type ?? 'vless';
    const zone = this.zones.find(body.zone);
    if (!zone) throw new ApiError('zone_not_found', `Zone "${body.zone}" does not exist.`, { zone: body.zone });
    if (connectionType !== 'vless') {
      throw new ApiError('unsupported_connection_type', `Connection type "${connectionType}" is not supported; use "vless".`, {
        connection_type: connectionType,
        supported: ['vless'],
      });
    }
    // 422: well-formed, but the client it names may not connect (enabled again, or its expiry moved, it may).
    // One read (one round trip on PostgreSQL) brings what the checks and the bases need.
    const { client, limits } = await this.store.getClientAndLimits(customerId, body.client_id);
    const block = clientBlock(client, wallClock());
    if (block) throw new ApiError(block, `Client "${body.client_id}" is ${block === 'client_disabled' ? 'disabled' : 'past its expires_at'}: it may not connect, so no session is made for it.`, { client_id: body.client_id });
    const expiresAt = expiryOf(limits.session, body.expires_at);
    const placement = await this.zones.place(zone);
    if (!placement) {
      throw new ApiError('zone_unavailable', `Zone "${zone.code}" has no active nodes right now.`, { zone: zone.code });
    }
    const made: NewSession = { id: randomUUID(), customer_id: customerId, client_id: body.client_id, zone: zone.code, reusable: body.reusable ?? false, created_at: isoNow(), expires_at: expiresAt };
    const row = await this.insert(made, placement.kind === 'node' ? placement.node.id : null, audit ? audit(made) : null);
    // Periodic caps: the new session's (and a new client's) bases, before it can move a byte.
    await recordQuotaBases(this.store, customerId, undefined, limits);
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
      ...(row.expires_at ? { expires_at: row.expires_at } : {}),
      ...(node ? { node: node.name } : {}),
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

  /** The session with its client's control and the customer's limits, in one read. */
  private async read(customerId: string, id: string): Promise<SessionStatusRead> {
    const read = await this.store.getSessionStatusOf(customerId, id);
    if (!read) throw new ApiError('session_not_found', 'Session not found.', {});
    return read;
  }

  async getView(customerId: string, id: string): Promise<Session> {
    const { row, control, limits } = await this.read(customerId, id);
    const view = (await this.views([row]))[0];
    const scopes = this.periodicScopes(control, limits, wallClock());
    if (!scopes.length) return view;
    return { ...view, ...(await this.quotaOf({ ...row, uploaded_bytes: view.uploaded_bytes, downloaded_bytes: view.downloaded_bytes }, control, scopes)) };
  }

  /** The periodic limits in force for the session's scopes (none: no quota to check, nothing to read). */
  private periodicScopes(control: ClientControl | undefined, limits: AllLimits, now: number): PeriodicScope[] {
    const out: PeriodicScope[] = [];
    for (const scope of SCOPES) {
      // Clients (extension): the client's override holds over the template, counted from its usage reset.
      const values = scope === 'client' && control ? mergeClientLimits(limits.client, control) : limits[scope];
      if (!values) continue;
      const period = periodOf(values, now);
      if (period && isPeriodic(values)) out.push({ scope, values, period });
    }
    return out;
  }

  /**
   * Whether a periodic byte cap of the session, its client or its customer is reached now, and
   * until when (the period's end; none for a rolling window): what was counted since the
   * period's recorded base (server/quota/job.ts) against the cap.
   */
  private async quotaOf(row: SessionRow, control: ClientControl | undefined, scopes: PeriodicScope[]): Promise<Quota> {
    let over: Quota = {};
    for (const { scope, values, period } of scopes) {
      const totals =
        scope === 'session'
          ? { up: row.uploaded_bytes, down: row.downloaded_bytes }
          : await this.store.sumCounters(row.customer_id, scope === 'client' ? row.client_id : undefined).then((s) => ({ up: s.uploaded_bytes, down: s.downloaded_bytes }));
      const entity = scope === 'global' ? row.customer_id : scope === 'client' ? row.client_id : row.id;
      const recorded = await this.store.quotaBase(row.customer_id, scope, entity, baseKeyOf(period));
      if (!recorded) continue; // nothing recorded yet: the period counts from now
      const base = scope === 'client' ? withUsageReset(recorded, period, control?.reset ?? null) : recorded;
      const reached = totals.up - base.up >= (values.uploaded_bytes ?? Infinity) || totals.down - base.down >= (values.downloaded_bytes ?? Infinity);
      if (!reached) continue;
      const until = period.end === null ? undefined : new Date(period.end).toISOString();
      // The latest renewal is when the session serves again.
      if (!over.over_quota || (until && (!over.over_quota_until || until > over.over_quota_until))) over = { over_quota: true, ...(until ? { over_quota_until: until } : {}) };
      if (!until) over = { over_quota: true };
    }
    return over;
  }

  /**
   * A session's status. Chained on the store's promise, not awaited step by step: a status read
   * is the API's hottest call, and without a periodic cap in force (the common case) it answers
   * in the reaction to the store's read, with no further promise.
   */
  status(customerId: string, id: string): Promise<SessionStatusResponse> {
    return this.store.getSessionStatusOf(customerId, id).then((read) => {
      if (!read) throw new ApiError('session_not_found', 'Session not found.', {});
      const row = this.withLive(read.row);
      const answer = (quota: Quota): SessionStatusResponse => ({
        ...quota,
        client_id: row.client_id,
        status: row.status,
        duration: row.duration,
        uploaded_bytes: row.uploaded_bytes,
        downloaded_bytes: row.downloaded_bytes,
        paused: row.paused,
        ...(row.expires_at ? { expires_at: row.expires_at } : {}),
      });
      const scopes = this.periodicScopes(read.control, read.limits, wallClock());
      return scopes.length ? this.quotaOf(row, read.control, scopes).then(answer) : answer({});
    });
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
    this.changes.emit();
    return { session_id: id, paused };
  }
}

/**
 * Ends, once a second, the sessions whose expires_at passed while nothing carried them (created
 * or idle): their status turns `ended`. A session with open connections is ended by the data
 * plane carrying it, at its expiry (connections cut, session_end), like a session over its cap.
 * Returns the stop function.
 */
export function startExpirySweep(store: Pick<ControlStore, 'expireIdleSessions'>, log: Logger, everyMs = 1000): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    store
      .expireIdleSessions(new Date(wallClock()).toISOString())
      .catch((err: unknown) => log.warn({ err: String(err) }, 'ending expired sessions failed; retrying'))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
