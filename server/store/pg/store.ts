// All SQL of the control plane on PostgreSQL: the same operations, names and return shapes as
// the SQLite Store (server/store/store.ts), Promise-returning, plus what a cluster needs (nodes,
// session placement, batched events). Every method is one statement or one transaction,
// committed before its promise resolves, so an acknowledged write survives a crash.
//
// Event ids: no gap that is later filled. A reader polling `id > last` must never see id N and
// afterwards find an id below N appear. A sequence (bigserial) cannot promise that: two
// transactions take 7 and 8, the one holding 8 commits first, a reader sees 8 and moves on,
// then 7 commits behind it and is lost for that reader. Here every insert takes its id by
// updating the single event_counter row in the same statement as the INSERT; the row lock is
// held until the inserting transaction ends, so the next writer, anywhere in the cluster,
// waits for that commit (or rollback) before it gets the following id. Ids are therefore
// handed out and become visible strictly in order: when a reader sees N, every id below N is
// already committed (a rolled-back id is reused by the next writer, so none stays missing
// either). The price is that event inserts are serialised cluster-wide for the length of one
// short statement; insertEvents() takes a batch under one lock for busy writers. The lock is
// released only after the transaction is visible to new snapshots (PostgreSQL removes it from
// the proc array before releasing locks), so the waiter's own commit can never overtake it.
//
// Notifications (pg_notify in the writing statement, delivered only on commit, in commit
// order) wake the other instances: `vad_events` (customer_id:id), `vad_sessions` (a session's
// pause flag changed: its id), `vad_limits` (customer_id:scope), `vad_tokens`, `vad_nodes`.
import { allocate, CLAIM_WINDOW_MS, limitsLockKey, releaseRow, type Grant, type GrantRequest, type GrantRow } from '../grants.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { EventInsert, LimitScope, LimitValues, RuntimePatch, SessionRow } from '../../domain.ts';
import type { EventType, LimitsRecord, SessionEvent } from '../../contract/schemas.ts';
import { isoNow } from '../../time.ts';
import type { NodeListeners, RelayNode, QuotaBase, AuditEntry, AuditFilter, AuditInsert, EventFilter, NodeInfo, NodePorts, NodeReportAdd, Role, SessionFilter, Store, TokenInfo, UsageAdd, UsageQuery, UsageStep, UsageSum } from '../store.ts';
import { quotaSnapshotSql, AUDIT_COLUMNS, AUDIT_INSERT_COLUMNS, AUDIT_VALUES, auditWhere, toAuditEntry, hashToken, NODE_TOKEN_PREFIX, NODE_UP_SECONDS, USAGE_STEP_MS } from '../store.ts';
import { mapDatabaseError, openPool, type PoolOptions } from './pool.ts';
import { migrate } from './schema.ts';
import { NODE_SILENT_SECONDS, REPAIRED_STATUS_SQL, repairEvents, type NodeHello, type RepairedEvent, type RepairedRow } from '../repair.ts';

export type { EventFilter, NodeInfo, NodePorts, Role, SessionFilter, TokenInfo };
export { NODE_UP_SECONDS };

/** An arbitrary constant naming "the silent-node repair sweep" among advisory locks. */
const REPAIR_LOCK_KEY = 0x7661645f726570n; // "vad_rep"

export const CHANNELS = {
  events: 'vad_events',
  sessions: 'vad_sessions',
  limits: 'vad_limits',
  tokens: 'vad_tokens',
  nodes: 'vad_nodes',
} as const;

const TOKEN_PREFIX = 'vad_';

export type { EventInsert } from '../../domain.ts';

/** The operations the SQLite Store and PgStore share (same names, parameters and results). */
export type SharedStoreOps =
  | 'countCustomers'
  | 'ensureCustomer'
  | 'createToken'
  | 'findToken'
  | 'listTokens'
  | 'revokeToken'
  | 'insertSession'
  | 'getSession'
  | 'getSessionOf'
  | 'listSessions'
  | 'setPaused'
  | 'saveRuntime'
  | 'sumCounters'
  | 'getLimitsRecord'
  | 'getLimits'
  | 'patchLimits'
  | 'deleteLimits'
  | 'insertEvent'
  | 'eventsAfter'
  | 'idBeforeNewest'
  | 'pruneEvents'
  | 'pruneEventsBatch'
  | 'addNode'
  | 'getNode'
  | 'getNodeByName'
  | 'findNodeByToken'
  | 'listNodes'
  | 'upNodes'
  | 'activeNodeZones'
  | 'touchNode'
  | 'removeNode'
  | 'placeSession'
  | 'placementOf'
  | 'placedNodes'
  | 'sessionsOnNode'
  | 'applyNodeReport'
  | 'nodeReportSeq'
  | 'grantBytes'
  | 'releaseGrant'
  | 'setNodeListeners'
  | 'relayNodes'
  | 'activeSessionNodes'
  | 'claimSession'
  // crash repair
  | 'nodeHello'
  | 'repairRestartedNode'
  | 'repairSilentNodes'
  | 'sessionsMovedFrom'
  // usage history
  | 'addUsage'
  | 'usageBuckets'
  | 'usageTopClients'
  | 'rollupUsage'
  | 'pruneUsage'
  | 'usageRowCounts'
  // audit trail
  | 'recordAudit'
  | 'auditEntries'
  | 'pruneAuditBatch'
  // session expiry
  | 'expireIdleSessions'
  // periodic caps
  | 'quotaBase'
  | 'snapshotQuotaBases'
  | 'pruneQuotaBases'
  | 'periodicLimits';

/**
 * The SQLite Store's shared operations, Promise-returning: what services written for either
 * database call. PgStore implements it (checked below); the SQLite Store fits it through a thin
 * wrapper that awaits nothing.
 */
export type AsyncStoreApi = {
  [K in SharedStoreOps]: Store[K] extends (...a: infer A) => infer R ? (...a: A) => Promise<R> : never;
} & { tokenGeneration: number; dataVersion(): Promise<number> };

type Queryable = pg.Pool | pg.PoolClient;
type RawSession = SessionRow & { seq: number };

function toSessionRow(r: RawSession): SessionRow {
  const { seq: _seq, ...rest } = r;
  return rest;
}

const SESSION_COLUMNS =
  'seq, id, customer_id, client_id, zone, reusable, paused, status, uploaded_bytes, downloaded_bytes, duration, connections, created_at, expires_at';
const TOKEN_SELECT = `SELECT t.id, t.customer_id, c.name AS customer_name, t.role, t.prefix, t.created_at, t.revoked_at
       FROM tokens t JOIN customers c ON c.id = t.customer_id`;
const EVENT_COLUMNS = 'id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes';
/** A node_grants row as grants.ts reads it (GrantRow): BIGINT byte counts as numbers. */
const GRANT_COLUMNS = 'node_id, used_up::float8 AS used_up, used_down::float8 AS used_down, granted_up::float8 AS granted_up, granted_down::float8 AS granted_down, gen';
const NODE_SELECT = `SELECT id, name, zone, public_host, vless_ws_port, vless_tcp_port, proxy_port, token_prefix, created_at, tls, tls_pcs,
         to_char(last_contact AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS last_contact,
         COALESCE(last_contact > now() - make_interval(secs => ${NODE_UP_SECONDS}), false) AS up
       FROM nodes`;

export class PgStore {
  readonly pool: pg.Pool;
  /** The connection of the transaction this store runs in, or the pool outside one. */
  private readonly db: Queryable;
  private readonly inTransaction: boolean;
  /** Bumped whenever this PgStore creates or revokes a token (as in the SQLite Store). */
  tokenGeneration = 0;

  constructor(pool: pg.Pool, client?: pg.PoolClient) {
    this.pool = pool;
    this.db = client ?? pool;
    this.inTransaction = client !== undefined;
  }

  /** Opens a pool on `url`, brings the schema up to date, and returns the store. */
  static async open(url: string, opts: PoolOptions = {}): Promise<PgStore> {
    const pool = openPool(url, opts);
    try {
      await migrate(pool).catch(mapDatabaseError);
    } catch (err) {
      await pool.end().catch(() => {});
      throw err;
    }
    return new PgStore(pool);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async rows<R extends object>(sql: string, args: unknown[] = []): Promise<R[]> {
    try {
      return (await this.db.query<R>(sql, args)).rows;
    } catch (err) {
      return mapDatabaseError(err);
    }
  }

  private async row<R extends object>(sql: string, args: unknown[] = []): Promise<R | undefined> {
    return (await this.rows<R>(sql, args))[0];
  }

  private async count(sql: string, args: unknown[] = []): Promise<number> {
    try {
      return (await this.db.query(sql, args)).rowCount ?? 0;
    } catch (err) {
      return mapDatabaseError(err);
    }
  }

  /**
   * Runs `fn` in one transaction on one connection; `fn` gets a store bound to it. Nested calls
   * join the outer transaction.
   */
  async transaction<T>(fn: (tx: PgStore) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      return mapDatabaseError(err);
    }
    const tx = new PgStore(this.pool, client);
    let broken: unknown;
    try {
      await client.query('BEGIN');
      const out = await fn(tx);
      await client.query('COMMIT');
      this.tokenGeneration += tx.tokenGeneration;
      return out;
    } catch (err) {
      broken = err;
      await client.query('ROLLBACK').catch(() => {});
      return mapDatabaseError(err);
    } finally {
      // A connection that failed mid-transaction is destroyed rather than reused.
      client.release(broken instanceof Error && !('severity' in broken) ? broken : undefined);
    }
  }

  /** Changes whenever any instance creates or revokes a token (the token caches watch it). */
  async dataVersion(): Promise<number> {
    return (await this.row<{ version: number }>('SELECT version FROM token_version'))!.version;
  }

  // Customers and tokens

  async countCustomers(): Promise<number> {
    return (await this.row<{ n: number }>('SELECT COUNT(*) AS n FROM customers'))!.n;
  }

  /** Race-free across instances: two first requests of a new customer create one row. */
  async ensureCustomer(name: string): Promise<{ id: string; created: boolean }> {
    const inserted = await this.row<{ id: string }>(
      'INSERT INTO customers (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING RETURNING id',
      [randomUUID(), name, isoNow()],
    );
    if (inserted) return { id: inserted.id, created: true };
    const found = await this.row<{ id: string }>('SELECT id FROM customers WHERE name = $1', [name]);
    return { id: found!.id, created: false };
  }

  /** Issues a token and returns it in plain text; only its SHA-256 is stored. */
  async createToken(customerName: string, role: Role): Promise<{ token: string; info: TokenInfo }> {
    const out = await this.transaction(async (tx) => {
      const customer = await tx.ensureCustomer(customerName);
      const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
      const id = randomUUID();
      const prefix = token.slice(0, TOKEN_PREFIX.length + 6);
      const created_at = isoNow();
      await tx.rows('INSERT INTO tokens (id, customer_id, role, hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
        id,
        customer.id,
        role,
        hashToken(token),
        prefix,
        created_at,
      ]);
      await tx.bumpTokenVersion();
      return {
        token,
        info: { id, customer_id: customer.id, customer_name: customerName, role, prefix, created_at, revoked_at: null },
      };
    });
    this.tokenGeneration++;
    return out;
  }

  private async bumpTokenVersion(): Promise<void> {
    await this.rows(`UPDATE token_version SET version = version + 1 RETURNING pg_notify('${CHANNELS.tokens}', version::text)`);
  }

  async findToken(token: string): Promise<TokenInfo | undefined> {
    return this.row<TokenInfo>(`${TOKEN_SELECT} WHERE t.hash = $1 AND t.revoked_at IS NULL`, [hashToken(token)]);
  }

  async listTokens(): Promise<TokenInfo[]> {
    return this.rows<TokenInfo>(`${TOKEN_SELECT} ORDER BY t.created_at, t.seq`);
  }

  /** Revokes by token id, by the plain token, or by its printed prefix when that is unique. */
  async revokeToken(ref: string): Promise<TokenInfo | undefined> {
    const out = await this.transaction(async (tx) => {
      const candidates = await tx.rows<TokenInfo>(
        `${TOKEN_SELECT} WHERE t.revoked_at IS NULL AND (t.id = $1 OR t.hash = $2 OR t.prefix = $1) FOR UPDATE OF t`,
        [ref, hashToken(ref)],
      );
      if (candidates.length !== 1) return undefined;
      const t = candidates[0];
      const revokedAt = isoNow();
      await tx.rows('UPDATE tokens SET revoked_at = $1 WHERE id = $2', [revokedAt, t.id]);
      await tx.bumpTokenVersion();
      return { ...t, revoked_at: revokedAt };
    });
    if (out) this.tokenGeneration++;
    return out;
  }

  // Sessions

  async insertSession(s: { id: string; customer_id: string; client_id: string; zone: string; reusable: boolean; created_at: string; expires_at?: string | null }): Promise<SessionRow> {
    const r = await this.row<RawSession>(
      `INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, created_at, expires_at)
       VALUES ($1, $2, $3, $4, 'vless', $5, $6, $7) RETURNING ${SESSION_COLUMNS}`,
      [s.id, s.customer_id, s.client_id, s.zone, s.reusable, s.created_at, s.expires_at ?? null],
    );
    return toSessionRow(r!);
  }

  /** As on SQLite (a connection to such a session is refused from its row's expires_at anyway). */
  async expireIdleSessions(nowIso: string): Promise<number> {
    return this.count(`UPDATE sessions SET status = 'ended' WHERE expires_at IS NOT NULL AND expires_at <= $1 AND status IN ('created', 'idle')`, [nowIso]);
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    const r = await this.row<RawSession>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1`, [id]);
    return r && toSessionRow(r);
  }

  /** The session only when it belongs to this customer: another customer's id is "not found". */
  async getSessionOf(customerId: string, id: string): Promise<SessionRow | undefined> {
    const r = await this.row<RawSession>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1 AND customer_id = $2`, [id, customerId]);
    return r && toSessionRow(r);
  }

  /** Newest first; `beforeSeq` is the opaque seq of the last row of the previous page. */
  async listSessions(
    customerId: string,
    filter: SessionFilter,
    limit: number,
    beforeSeq?: number,
  ): Promise<{ rows: SessionRow[]; nextSeq: number | null }> {
    const where = ['customer_id = $1'];
    const args: (string | number)[] = [customerId];
    const add = (sql: string, v: string | number) => {
      args.push(v);
      where.push(`${sql} $${args.length}`);
    };
    if (filter.client_id !== undefined) add('client_id =', filter.client_id);
    if (filter.status !== undefined) add('status =', filter.status);
    if (filter.zone !== undefined) add('zone =', filter.zone);
    if (beforeSeq !== undefined) add('seq <', beforeSeq);
    args.push(limit + 1);
    const raw = await this.rows<RawSession>(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${args.length}`,
      args,
    );
    const more = raw.length > limit;
    const page = more ? raw.slice(0, limit) : raw;
    return { rows: page.map(toSessionRow), nextSeq: more ? page[page.length - 1].seq : null };
  }

  /** Also tells every instance (and through them the node carrying the session) at once. */
  async setPaused(id: string, paused: boolean): Promise<void> {
    await this.rows(`UPDATE sessions SET paused = $1 WHERE id = $2 RETURNING pg_notify('${CHANNELS.sessions}', id)`, [paused, id]);
  }

  async saveRuntime(id: string, patch: RuntimePatch): Promise<void> {
    const sets: string[] = [];
    const args: (string | number)[] = [];
    for (const key of ['status', 'uploaded_bytes', 'downloaded_bytes', 'duration', 'connections'] as const) {
      const v = patch[key];
      if (v !== undefined) {
        args.push(v);
        sets.push(`${key} = $${args.length}`);
      }
    }
    if (sets.length === 0) return;
    args.push(id);
    await this.rows(`UPDATE sessions SET ${sets.join(', ')} WHERE id = $${args.length}`, args);
  }

  async sumCounters(customerId: string, clientId?: string): Promise<{ uploaded_bytes: number; downloaded_bytes: number }> {
    const sums = 'SELECT COALESCE(SUM(uploaded_bytes),0)::bigint AS u, COALESCE(SUM(downloaded_bytes),0)::bigint AS d FROM sessions';
    const r = (
      clientId === undefined
        ? await this.row<{ u: number; d: number }>(`${sums} WHERE customer_id = $1`, [customerId])
        : await this.row<{ u: number; d: number }>(`${sums} WHERE customer_id = $1 AND client_id = $2`, [customerId, clientId])
    )!;
    return { uploaded_bytes: r.u, downloaded_bytes: r.d };
  }

  // Limits

  async getLimitsRecord(customerId: string, scope: LimitScope): Promise<LimitsRecord | undefined> {
    const r = await this.row<{ id: string; fields: string; created_at: string; updated_at: string }>(
      'SELECT id, fields, created_at, updated_at FROM limits WHERE customer_id = $1 AND scope = $2',
      [customerId, scope],
    );
    if (!r) return undefined;
    return { id: r.id, created_at: r.created_at, updated_at: r.updated_at, ...(JSON.parse(r.fields) as LimitValues) };
  }

  async getLimits(customerId: string, scope: LimitScope): Promise<LimitValues | undefined> {
    const r = await this.row<{ fields: string }>('SELECT fields FROM limits WHERE customer_id = $1 AND scope = $2', [customerId, scope]);
    return r ? (JSON.parse(r.fields) as LimitValues) : undefined;
  }

  /**
   * Merges `patch` into the record (null removes a field), creating it on first use. The row is
   * created empty if missing and then locked, so concurrent patches from several instances
   * apply one after the other and none is lost.
   */
  async patchLimits(customerId: string, scope: LimitScope, patch: Record<string, number | string | null>): Promise<LimitsRecord> {
    return this.transaction(async (tx) => {
      const now = isoNow();
      await tx.rows(
        `INSERT INTO limits (customer_id, scope, id, fields, created_at, updated_at) VALUES ($1, $2, $3, '{}', $4, $4)
         ON CONFLICT (customer_id, scope) DO NOTHING`,
        [customerId, scope, randomUUID(), now],
      );
      const current = (await tx.row<{ fields: string }>('SELECT fields FROM limits WHERE customer_id = $1 AND scope = $2 FOR UPDATE', [
        customerId,
        scope,
      ]))!;
      const fields: Record<string, number | string> = {};
      for (const [k, v] of Object.entries(JSON.parse(current.fields) as Record<string, unknown>)) if (typeof v === 'number' || typeof v === 'string') fields[k] = v;
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete fields[k];
        else fields[k] = v;
      }
      await tx.rows(
        `UPDATE limits SET fields = $1, updated_at = $2 WHERE customer_id = $3 AND scope = $4
         RETURNING pg_notify('${CHANNELS.limits}', customer_id || ':' || scope)`,
        [JSON.stringify(fields), now, customerId, scope],
      );
      return (await tx.getLimitsRecord(customerId, scope))!;
    });
  }

  async deleteLimits(customerId: string, scope: LimitScope): Promise<boolean> {
    const gone = await this.rows(
      `DELETE FROM limits WHERE customer_id = $1 AND scope = $2 RETURNING pg_notify('${CHANNELS.limits}', customer_id || ':' || scope)`,
      [customerId, scope],
    );
    return gone.length > 0;
  }

  // Events

  /** Stores one event; its id is the next of the cluster-wide counter (see the file comment). */
  async insertEvent(e: EventInsert): Promise<SessionEvent> {
    return (await this.insertEvents([e]))[0];
  }

  /**
   * Stores a batch under one hold of the counter: ids are consecutive, in the order given.
   * One statement: the counter update, the inserts and the wake-up commit together.
   */
  async insertEvents(batch: EventInsert[]): Promise<SessionEvent[]> {
    if (batch.length === 0) return [];
    const rows = await this.rows<SessionEvent & { customer_id: string }>(
      `WITH c AS (
         UPDATE event_counter SET last_id = last_id + $1 RETURNING last_id - $1 AS base
       ), ins AS (
         INSERT INTO events (id, customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes)
         SELECT c.base + b.ord, b.customer_id, b.session_id, b.event_type, b.created_at, b.duration, b.downloaded_bytes, b.uploaded_bytes
         FROM c, jsonb_to_recordset($2::jsonb)
           AS b(ord bigint, customer_id text, session_id text, event_type text, created_at text, duration bigint, downloaded_bytes bigint, uploaded_bytes bigint)
         RETURNING ${EVENT_COLUMNS}, customer_id
       ), woke AS (
         SELECT pg_notify('${CHANNELS.events}', customer_id || ':' || MAX(id)) FROM ins GROUP BY customer_id
       )
       SELECT ins.*, (SELECT COUNT(*) FROM woke) AS _woke FROM ins ORDER BY id`,
      [batch.length, JSON.stringify(batch.map((e, i) => ({ ...e, ord: i + 1 })))],
    );
    return rows.map((r) => ({
      id: r.id,
      session_id: r.session_id,
      event_type: r.event_type,
      created_at: r.created_at,
      duration: r.duration,
      downloaded_bytes: r.downloaded_bytes,
      uploaded_bytes: r.uploaded_bytes,
    }));
  }

  private eventWhere(customerId: string, filter: EventFilter): { where: string[]; args: (string | number | string[])[] } {
    const where = ['customer_id = $1'];
    const args: (string | number | string[])[] = [customerId];
    if (filter.sessionIds?.length) {
      args.push(filter.sessionIds);
      where.push(`session_id = ANY($${args.length}::text[])`);
    }
    if (filter.types?.length) {
      args.push(filter.types);
      where.push(`event_type = ANY($${args.length}::text[])`);
    }
    return { where, args };
  }

  /** Stored events of a customer with id > afterId, oldest first, at most `limit`. */
  async eventsAfter(customerId: string, afterId: number, filter: EventFilter, limit: number): Promise<SessionEvent[]> {
    const { where, args } = this.eventWhere(customerId, filter);
    args.push(afterId, limit);
    return this.rows<SessionEvent>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE ${where.join(' AND ')} AND id > $${args.length - 1} ORDER BY id LIMIT $${args.length}`,
      args,
    );
  }

  /** The id after which exactly the `count` newest matching events follow (0 when there are fewer). */
  async idBeforeNewest(customerId: string, filter: EventFilter, count: number): Promise<number> {
    const { where, args } = this.eventWhere(customerId, filter);
    args.push(count);
    const r = await this.row<{ id: number }>(`SELECT id FROM events WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT 1 OFFSET $${args.length}`, args);
    return r?.id ?? 0;
  }

  /**
   * The newest committed event id of the whole log (0 when empty): where a live-only stream
   * starts. An insert still in flight holds the next id uncommitted, so it is delivered.
   */
  async lastEventId(): Promise<number> {
    return (await this.row<{ last_id: number }>('SELECT last_id FROM event_counter'))!.last_id;
  }

  async pruneEvents(olderThanIso: string): Promise<number> {
    return this.count('DELETE FROM events WHERE created_at < $1', [olderThanIso]);
  }

  /** Deletes at most `limit` of the oldest events older than the cutoff (http/retention.ts prunes in steps). */
  async pruneEventsBatch(olderThanIso: string, limit: number): Promise<number> {
    return this.count('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < $1 ORDER BY id LIMIT $2)', [olderThanIso, limit]);
  }

  // Nodes (data-plane nodes of the cluster) and session placement

  /** Adds a node and returns its token in plain text once; only its SHA-256 is stored. */
  async addNode(n: { name: string; zone: string; public_host: string } & NodePorts): Promise<{ token: string; node: NodeInfo }> {
    const token = NODE_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const id = randomUUID();
    await this.rows(
      `INSERT INTO nodes (id, name, zone, public_host, vless_ws_port, vless_tcp_port, proxy_port, token_hash, token_prefix, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING pg_notify('${CHANNELS.nodes}', id)`,
      [
        id,
        n.name,
        n.zone,
        n.public_host,
        n.vless_ws_port ?? null,
        n.vless_tcp_port ?? null,
        n.proxy_port ?? null,
        hashToken(token),
        token.slice(0, NODE_TOKEN_PREFIX.length + 6),
        isoNow(),
      ],
    );
    return { token, node: (await this.getNode(id))! };
  }

  async getNode(id: string): Promise<NodeInfo | undefined> {
    return this.row<NodeInfo>(`${NODE_SELECT} WHERE id = $1`, [id]);
  }

  async getNodeByName(name: string): Promise<NodeInfo | undefined> {
    return this.row<NodeInfo>(`${NODE_SELECT} WHERE name = $1`, [name]);
  }

  /** The node a node token belongs to (API tokens never match: another table, another prefix). */
  async findNodeByToken(token: string): Promise<NodeInfo | undefined> {
    if (!token.startsWith(NODE_TOKEN_PREFIX)) return undefined;
    return this.row<NodeInfo>(`${NODE_SELECT} WHERE token_hash = $1`, [hashToken(token)]);
  }

  async listNodes(): Promise<NodeInfo[]> {
    return this.rows<NodeInfo>(`${NODE_SELECT} ORDER BY zone, name`);
  }

  /** Up nodes of a zone, the least loaded (fewest placed sessions) first. */
  async upNodes(zone: string): Promise<NodeInfo[]> {
    return this.rows<NodeInfo>(
      `SELECT n.* FROM (${NODE_SELECT} WHERE zone = $1) n
       WHERE n.up ORDER BY (SELECT COUNT(*) FROM session_placements p WHERE p.node_id = n.id), n.name`,
      [zone],
    );
  }

  /** Zones with at least one up node. */
  async activeNodeZones(): Promise<string[]> {
    return (
      await this.rows<{ zone: string }>(`SELECT DISTINCT zone FROM nodes WHERE last_contact > now() - make_interval(secs => ${NODE_UP_SECONDS})`)
    ).map((r) => r.zone);
  }

  /** Records a node's contact (and the ports it reports), by the database clock. */
  async touchNode(id: string, ports?: NodePorts): Promise<boolean> {
    const p = ports ?? {};
    return (
      (await this.count(
        `UPDATE nodes SET last_contact = now(),
           vless_ws_port = CASE WHEN $2 THEN $3 ELSE vless_ws_port END,
           vless_tcp_port = CASE WHEN $4 THEN $5 ELSE vless_tcp_port END,
           proxy_port = CASE WHEN $6 THEN $7 ELSE proxy_port END
         WHERE id = $1`,
        [
          id,
          'vless_ws_port' in p,
          p.vless_ws_port ?? null,
          'vless_tcp_port' in p,
          p.vless_tcp_port ?? null,
          'proxy_port' in p,
          p.proxy_port ?? null,
        ],
      )) > 0
    );
  }

  /** Detaches a node (see the SQLite Store's removeNode). Every instance hears of it at once. */
  async removeNode(name: string): Promise<NodeInfo | undefined> {
    return this.transaction(async (tx) => {
      const node = await tx.getNodeByName(name);
      if (!node) return undefined;
      await tx.repairPlaced(node.id, Number.MAX_SAFE_INTEGER);
      await tx.replaceFrom(node.id, node.zone);
      await tx.rows(`DELETE FROM nodes WHERE id = $1 RETURNING pg_notify('${CHANNELS.nodes}', id)`, [node.id]);
      return node;
    });
  }

  async nodeReportSeq(nodeId: string): Promise<number | undefined> {
    const r = await this.row<{ report_seq: string }>('SELECT report_seq FROM nodes WHERE id = $1', [nodeId]);
    return r ? Number(r.report_seq) : undefined;
  }

  /** Applies one report of a node at most once, its events included (see the SQLite Store's applyNodeReport). */
  async applyNodeReport(nodeId: string, seq: number, adds: NodeReportAdd[], events: EventInsert[] = []): Promise<SessionEvent[] | false> {
    return this.transaction(async (tx) => {
      const done = await tx.rows<{ id: string }>('UPDATE nodes SET report_seq = $1 WHERE id = $2 AND report_seq < $1 RETURNING id', [seq, nodeId]);
      if (done.length === 0) return false;
      for (const a of adds) {
        await tx.addReported(a, nodeId);
        if (a.uploaded_bytes > 0 || a.downloaded_bytes > 0) {
          // What the node used of its grants (server/store/grants.ts): the client's and the customer's.
          await tx.rows(
            `INSERT INTO node_grants (node_id, customer_id, client_id, used_up, used_down)
               SELECT $1, customer_id, k.client_id, $2, $3 FROM sessions, LATERAL (VALUES (sessions.client_id), ('')) AS k(client_id) WHERE id = $4
             ON CONFLICT (customer_id, client_id, node_id) DO UPDATE SET used_up = node_grants.used_up + EXCLUDED.used_up, used_down = node_grants.used_down + EXCLUDED.used_down`,
            [nodeId, a.uploaded_bytes, a.downloaded_bytes, a.id],
          );
        }
      }
      // The events under the same transaction: their ids come from the locked counter row and
      // their NOTIFY is delivered at the commit, so readers on every instance see them then.
      return tx.insertEvents(events);
    });
  }

  /**
   * Applies one report of an instance's counter journal (cluster/journal.ts) at most once: the
   * counters are added, the events stored, and the journal's last applied seq kept in the same
   * transaction; false when the seq was applied already (nothing is done).
   */
  async applyJournalReport(journalId: string, seq: number, adds: NodeReportAdd[], events: EventInsert[] = []): Promise<SessionEvent[] | false> {
    return this.transaction(async (tx) => {
      const done = await tx.rows<{ journal_id: string }>(
        `INSERT INTO journal_seqs (journal_id, seq) VALUES ($1, $2)
           ON CONFLICT (journal_id) DO UPDATE SET seq = EXCLUDED.seq WHERE journal_seqs.seq < EXCLUDED.seq
         RETURNING journal_id`,
        [journalId, seq],
      );
      if (done.length === 0) return false;
      for (const a of adds) await tx.addReported(a, null);
      return tx.insertEvents(events);
    });
  }

  /**
   * Adds a report's bytes to a session's counters (never overwriting: several data planes may
   * carry one session) and sets the runtime fields it names; a node's report counts only for the
   * sessions placed on that node, or moved away from it.
   */
  private async addReported(a: NodeReportAdd, nodeId: string | null): Promise<void> {
    const placed = nodeId === null ? '' : ' AND id IN (SELECT session_id FROM session_placements WHERE node_id = $7 OR moved_from = $7)';
    await this.rows(
      `UPDATE sessions SET uploaded_bytes = uploaded_bytes + $1, downloaded_bytes = downloaded_bytes + $2,
         status = COALESCE($3, status), duration = COALESCE($4, duration), connections = COALESCE($5, connections)
       WHERE id = $6${placed}`,
      [a.uploaded_bytes, a.downloaded_bytes, a.status ?? null, a.duration ?? null, a.connections ?? null, a.id, ...(nodeId === null ? [] : [nodeId])],
    );
  }

  async setNodeListeners(id: string, l: NodeListeners): Promise<void> {
    await this.rows('UPDATE nodes SET relay_port = $1, relay_pcs = $2, tls = $3, tls_pcs = $4 WHERE id = $5', [l.relay_port, l.relay_pcs, l.tls, l.tls_pcs, id]);
  }

  async relayNodes(): Promise<RelayNode[]> {
    return this.rows<RelayNode>(
      `SELECT id, name, zone, public_host, relay_port, relay_pcs, token_hash FROM nodes
       WHERE last_contact > now() - make_interval(secs => ${NODE_UP_SECONDS}) AND relay_port IS NOT NULL AND relay_pcs IS NOT NULL ORDER BY name`,
    );
  }

  async activeSessionNodes(customerId: string): Promise<Array<{ client_id: string; node_id: string | null }>> {
    return this.rows(
      `SELECT s.client_id, p.node_id FROM sessions s LEFT JOIN session_placements p ON p.session_id = s.id WHERE s.customer_id = $1 AND s.status = 'active'`,
      [customerId],
    );
  }

  /** See the SQLite Store's grantBytes; the customer's advisory lock orders the instances' grants. */
  async grantBytes(nodeId: string, customerId: string, clientId: string, req: GrantRequest): Promise<Grant> {
    return this.transaction(async (tx) => {
      await tx.rows('SELECT pg_advisory_xact_lock(hashtext($1))', [limitsLockKey(customerId)]);
      const rows = await tx.rows<GrantRow>(
        `SELECT ${GRANT_COLUMNS} FROM node_grants WHERE customer_id = $1 AND client_id = $2`,
        [customerId, clientId],
      );
      const t = await tx.sumCounters(customerId, clientId === '' ? undefined : clientId);
      const { row, grant } = allocate(rows, nodeId, { up: Number(t.uploaded_bytes), down: Number(t.downloaded_bytes) }, req);
      await tx.rows(
        `INSERT INTO node_grants (node_id, customer_id, client_id, used_up, used_down, granted_up, granted_down) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (customer_id, client_id, node_id) DO UPDATE SET granted_up = EXCLUDED.granted_up, granted_down = EXCLUDED.granted_down`,
        [nodeId, customerId, clientId, row.used_up, row.used_down, row.granted_up, row.granted_down],
      );
      return grant;
    });
  }

  /** See the SQLite Store's releaseGrant; under the customer's lock, like every grant. */
  async releaseGrant(nodeId: string, customerId: string, clientId: string, gen: number): Promise<boolean> {
    return this.transaction(async (tx) => {
      await tx.rows('SELECT pg_advisory_xact_lock(hashtext($1))', [limitsLockKey(customerId)]);
      const r = await tx.row<GrantRow>(
        `SELECT ${GRANT_COLUMNS} FROM node_grants WHERE customer_id = $1 AND client_id = $2 AND node_id = $3`,
        [customerId, clientId, nodeId],
      );
      if (!r || r.gen !== gen) return false;
      const next = releaseRow(r);
      await tx.rows('UPDATE node_grants SET granted_up = $1, granted_down = $2, gen = $3 WHERE customer_id = $4 AND client_id = $5 AND node_id = $6', [next.granted_up, next.granted_down, next.gen, customerId, clientId, nodeId]);
      return true;
    });
  }

  /** See the SQLite Store's claimSession; the customer's advisory lock orders the instances' claims. */
  async claimSession(nodeId: string, sessionId: string, localActive: string[], max: number): Promise<boolean> {
    return this.transaction(async (tx) => {
      const s = await tx.row<{ customer_id: string; client_id: string }>('SELECT customer_id, client_id FROM sessions WHERE id = $1', [sessionId]);
      if (!s) return false;
      await tx.rows('SELECT pg_advisory_xact_lock(hashtext($1))', [limitsLockKey(s.customer_id)]);
      const others = await tx.rows<{ id: string; status: string; claimed_at: string | null; node_id: string | null }>(
        `SELECT s.id, s.status, s.claimed_at, p.node_id FROM sessions s LEFT JOIN session_placements p ON p.session_id = s.id
         WHERE s.customer_id = $1 AND s.client_id = $2 AND s.id <> $3 AND s.status <> 'ended'`,
        [s.customer_id, s.client_id, sessionId],
      );
      const mine = new Set(localActive);
      const since = Date.now() - CLAIM_WINDOW_MS;
      const active = others.filter((o) => (o.node_id === nodeId ? mine.has(o.id) : o.status === 'active' || Number(o.claimed_at ?? 0) > since)).length;
      if (active >= max) return false;
      await tx.rows('UPDATE sessions SET claimed_at = $1 WHERE id = $2', [Date.now(), sessionId]);
      return true;
    });
  }

  async placeSession(sessionId: string, nodeId: string): Promise<void> {
    await this.rows(
      `INSERT INTO session_placements (session_id, node_id, placed_at) VALUES ($1, $2, $3)
       ON CONFLICT (session_id) DO UPDATE SET node_id = EXCLUDED.node_id, placed_at = EXCLUDED.placed_at, moved_from = NULL`,
      [sessionId, nodeId, isoNow()],
    );
  }

  /** The node carrying a session, if it is placed. */
  async placementOf(sessionId: string): Promise<string | undefined> {
    return (await this.row<{ node_id: string }>('SELECT node_id FROM session_placements WHERE session_id = $1', [sessionId]))?.node_id;
  }

  /** The nodes of those of `sessionIds` that are placed on a catalogue node (sessions on `local` have none). */
  async placedNodes(sessionIds: string[]): Promise<(NodeInfo & { session_id: string })[]> {
    if (sessionIds.length === 0) return [];
    return this.rows<NodeInfo & { session_id: string }>(
      `SELECT p.session_id, n.* FROM session_placements p JOIN (${NODE_SELECT}) n ON n.id = p.node_id WHERE p.session_id = ANY($1::text[])`,
      [sessionIds],
    );
  }

  // Crash repair: see the SQLite Store's operations of the same names.

  async nodeHello(nodeId: string, boot: string): Promise<NodeHello> {
    const r = await this.row<{ boot_id: string | null; boot_repaired: boolean }>('SELECT boot_id, boot_repaired FROM nodes WHERE id = $1', [nodeId]);
    if (r?.boot_id === boot) {
      if (r.boot_repaired) await this.rows('UPDATE nodes SET boot_repaired = FALSE WHERE id = $1 AND boot_id = $2', [nodeId, boot]);
      return 'same';
    }
    return r?.boot_repaired ? 'new_after_repair' : 'new';
  }

  /** Recorded by a conditional UPDATE: of instances racing, one repairs (the others wait on the row, then see it recorded). */
  async repairRestartedNode(nodeId: string, boot: string, claimsBefore: number): Promise<RepairedEvent[] | false> {
    return this.transaction(async (tx) => {
      const r = await tx.rows('UPDATE nodes SET boot_id = $2, boot_repaired = FALSE WHERE id = $1 AND boot_id IS DISTINCT FROM $2 RETURNING id', [nodeId, boot]);
      if (r.length === 0) return false;
      return tx.repairPlaced(nodeId, claimsBefore);
    });
  }

  /**
   * Sessions this instance's own data plane had connections of when its previous process died
   * (its counter journal lists them): those still `active` and placed on no node become idle or
   * ended, with session_stats and session_end, as their last connection closing would have made them.
   */
  async repairCarriedSessions(ids: string[]): Promise<RepairedEvent[]> {
    if (ids.length === 0) return [];
    return this.transaction(async (tx) => {
      const rows = await tx.rows<RepairedRow>(
        `UPDATE sessions SET status = ${REPAIRED_STATUS_SQL('reusable')}, connections = 0
         WHERE status = 'active' AND id = ANY($1::text[]) AND id NOT IN (SELECT session_id FROM session_placements)
         RETURNING seq, id, customer_id, duration, uploaded_bytes, downloaded_bytes`,
        [ids],
      );
      return tx.storeRepairEvents(rows);
    });
  }

  /** One instance sweeps at a time (a transaction-scoped advisory lock; the others skip the pass). */
  async repairSilentNodes(): Promise<RepairedEvent[]> {
    const find = (db: PgStore) =>
      db.rows<{ id: string; zone: string }>(
        `SELECT DISTINCT n.id, n.zone FROM nodes n JOIN session_placements p ON p.node_id = n.id JOIN sessions s ON s.id = p.session_id
         WHERE n.last_contact < now() - make_interval(secs => ${NODE_SILENT_SECONDS})
           AND (s.status = 'active' OR s.claimed_at IS NOT NULL OR (s.status <> 'ended' AND EXISTS (
             SELECT 1 FROM nodes u WHERE u.zone = n.zone AND u.id <> n.id AND u.last_contact > now() - make_interval(secs => ${NODE_UP_SECONDS}))))`,
      );
    if ((await find(this)).length === 0) return [];
    return this.transaction(async (tx) => {
      const [lock] = await tx.rows<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [REPAIR_LOCK_KEY.toString()]);
      if (!lock.ok) return [];
      const out: RepairedEvent[] = [];
      for (const n of await find(tx)) {
        const events = await tx.repairPlaced(n.id, Number.MAX_SAFE_INTEGER);
        if (events.length) await tx.rows('UPDATE nodes SET boot_repaired = TRUE WHERE id = $1', [n.id]);
        out.push(...events);
        await tx.replaceFrom(n.id, n.zone);
      }
      return out;
    });
  }

  /** Inside a transaction: the UPDATE's row locks and its `status = 'active'` condition repair each session once. */
  private async repairPlaced(nodeId: string, claimsBefore: number): Promise<RepairedEvent[]> {
    const rows = await this.rows<RepairedRow>(
      `UPDATE sessions SET status = ${REPAIRED_STATUS_SQL('reusable')}, claimed_at = NULL
       WHERE status = 'active' AND id IN (SELECT session_id FROM session_placements WHERE node_id = $1)
       RETURNING seq, id, customer_id, duration, uploaded_bytes, downloaded_bytes`,
      [nodeId],
    );
    await this.rows('UPDATE sessions SET claimed_at = NULL WHERE claimed_at < $2 AND id IN (SELECT session_id FROM session_placements WHERE node_id = $1)', [nodeId, claimsBefore]);
    return this.storeRepairEvents(rows);
  }

  /** session_stats and session_end of each repaired session, stored (inside the repair's transaction). */
  private async storeRepairEvents(rows: RepairedRow[]): Promise<RepairedEvent[]> {
    const inserts = repairEvents(rows, isoNow());
    const stored = await this.insertEvents(inserts);
    return stored.map((event, i) => ({ customerId: inserts[i].customer_id, event }));
  }

  /** Inside a transaction: moves are conditional on the old node, so racing instances move a session once. */
  private async replaceFrom(nodeId: string, zone: string): Promise<void> {
    const targets = (await this.upNodes(zone)).filter((n) => n.id !== nodeId);
    if (targets.length === 0) return;
    const counts = await this.rows<{ node_id: string; c: string }>('SELECT node_id, COUNT(*) AS c FROM session_placements WHERE node_id = ANY($1::text[]) GROUP BY node_id', [targets.map((n) => n.id)]);
    const load = new Map(targets.map((n) => [n.id, Number(counts.find((c) => c.node_id === n.id)?.c ?? 0)]));
    const ids = await this.rows<{ session_id: string }>(
      `SELECT p.session_id FROM session_placements p JOIN sessions s ON s.id = p.session_id WHERE p.node_id = $1 AND s.status <> 'ended' ORDER BY s.seq`,
      [nodeId],
    );
    for (const { session_id } of ids) {
      const to = [...load].sort((a, b) => a[1] - b[1])[0];
      await this.rows('UPDATE session_placements SET node_id = $1, placed_at = $2, moved_from = node_id WHERE session_id = $3 AND node_id = $4', [to[0], isoNow(), session_id, nodeId]);
      load.set(to[0], to[1] + 1);
    }
  }

  async sessionsMovedFrom(nodeId: string): Promise<SessionRow[]> {
    return this.placedBy('moved_from', nodeId);
  }

  /** Sessions placed on a node (a node may act only on these). */
  async sessionsOnNode(nodeId: string): Promise<SessionRow[]> {
    return this.placedBy('node_id', nodeId);
  }

  private async placedBy(column: 'node_id' | 'moved_from', nodeId: string): Promise<SessionRow[]> {
    const raw = await this.rows<RawSession>(
      `SELECT ${SESSION_COLUMNS.split(', ').map((c) => `s.${c}`).join(', ')}
       FROM session_placements p JOIN sessions s ON s.id = p.session_id WHERE p.${column} = $1 ORDER BY s.seq`,
      [nodeId],
    );
    return raw.map(toSessionRow);
  }

  // Usage history: the SQLite Store's operations, same shapes.

  /** Adds every entry to its minute bucket in one statement (several instances add to one row safely). */
  async addUsage(adds: UsageAdd[]): Promise<void> {
    if (adds.length === 0) return;
    await this.rows(
      `INSERT INTO usage_buckets (step, start, session_id, node, customer_id, client_id, zone, uploaded_bytes, downloaded_bytes)
       SELECT 'minute', a.start, s.id, a.node, s.customer_id, s.client_id, s.zone, SUM(a.up), SUM(a.down)
       FROM jsonb_to_recordset($1::jsonb) AS a(session_id text, node text, start bigint, up bigint, down bigint)
       JOIN sessions s ON s.id = a.session_id
       GROUP BY a.start, s.id, a.node, s.customer_id, s.client_id, s.zone
       ON CONFLICT (session_id, step, start, node) DO UPDATE SET
         uploaded_bytes = usage_buckets.uploaded_bytes + EXCLUDED.uploaded_bytes,
         downloaded_bytes = usage_buckets.downloaded_bytes + EXCLUDED.downloaded_bytes`,
      [JSON.stringify(adds.map((a) => ({ session_id: a.session_id, node: a.node, start: a.start, up: a.uploaded_bytes, down: a.downloaded_bytes })))],
    );
  }

  async usageBuckets(q: UsageQuery): Promise<({ start: number } & UsageSum)[]> {
    const args: unknown[] = [q.stepMs];
    const where = pgUsageWhere(q, args);
    return this.rows<{ start: number } & UsageSum>(
      `SELECT (start / $1::bigint) * $1::bigint AS start, SUM(uploaded_bytes)::bigint AS uploaded_bytes, SUM(downloaded_bytes)::bigint AS downloaded_bytes
       FROM usage_buckets WHERE ${where} GROUP BY 1 ORDER BY 1`,
      args,
    );
  }

  async usageTopClients(q: UsageQuery, limit: number): Promise<({ client_id: string } & UsageSum)[]> {
    const args: unknown[] = [];
    const where = pgUsageWhere(q, args);
    args.push(limit);
    return this.rows<{ client_id: string } & UsageSum>(
      `SELECT client_id, SUM(uploaded_bytes)::bigint AS uploaded_bytes, SUM(downloaded_bytes)::bigint AS downloaded_bytes
       FROM usage_buckets WHERE ${where} GROUP BY client_id
       ORDER BY SUM(uploaded_bytes) + SUM(downloaded_bytes) DESC, client_id LIMIT $${args.length}`,
      args,
    );
  }

  /**
   * One statement: the rows are deleted and their sums added to the coarser buckets together.
   * SKIP LOCKED: two instances compacting at once take different rows, none twice.
   */
  async rollupUsage(from: UsageStep, to: UsageStep, olderThan: number, limit: number): Promise<number> {
    const r = await this.row<{ n: number }>(
      `WITH moved AS (
         DELETE FROM usage_buckets WHERE ctid IN (
           SELECT ctid FROM usage_buckets WHERE step = $1 AND start < $2 ORDER BY start LIMIT $3 FOR UPDATE SKIP LOCKED
         ) RETURNING *
       ), added AS (
         INSERT INTO usage_buckets (step, start, session_id, node, customer_id, client_id, zone, uploaded_bytes, downloaded_bytes)
         SELECT $4, (start / $5::bigint) * $5::bigint, session_id, node, customer_id, client_id, zone, SUM(uploaded_bytes), SUM(downloaded_bytes)
         FROM moved GROUP BY 2, session_id, node, customer_id, client_id, zone
         ON CONFLICT (session_id, step, start, node) DO UPDATE SET
           uploaded_bytes = usage_buckets.uploaded_bytes + EXCLUDED.uploaded_bytes,
           downloaded_bytes = usage_buckets.downloaded_bytes + EXCLUDED.downloaded_bytes
         RETURNING 1
       )
       SELECT (SELECT COUNT(*) FROM moved)::int AS n, (SELECT COUNT(*) FROM added)::int AS _added`,
      [from, olderThan, limit, to, USAGE_STEP_MS[to]],
    );
    return r?.n ?? 0;
  }

  async pruneUsage(step: UsageStep, olderThan: number, limit: number): Promise<number> {
    return this.count(
      'DELETE FROM usage_buckets WHERE ctid IN (SELECT ctid FROM usage_buckets WHERE step = $1 AND start < $2 ORDER BY start LIMIT $3 FOR UPDATE SKIP LOCKED)',
      [step, olderThan, limit],
    );
  }

  async usageRowCounts(): Promise<Record<UsageStep, number>> {
    const out: Record<UsageStep, number> = { minute: 0, hour: 0, day: 0 };
    for (const r of await this.rows<{ step: UsageStep; n: number }>('SELECT step, COUNT(*)::int AS n FROM usage_buckets GROUP BY step')) out[r.step] = r.n;
    return out;
  }

  // Audit trail, as on SQLite

  async recordAudit(a: AuditInsert): Promise<number> {
    const r = await this.row<{ id: string }>(`INSERT INTO audit_log (${AUDIT_INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`, AUDIT_VALUES(a));
    return Number(r!.id);
  }

  async auditEntries(customerId: string, filter: AuditFilter, limit: number, beforeId?: number): Promise<{ rows: AuditEntry[]; nextId: number | null }> {
    const { where, args } = auditWhere(customerId, filter, beforeId, (i) => `$${i}`);
    const raw = await this.rows<Parameters<typeof toAuditEntry>[0]>(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT $${args.length + 1}`, [...args, limit + 1]);
    const more = raw.length > limit;
    const rows = raw.slice(0, limit).map(toAuditEntry);
    return { rows, nextId: more ? rows[rows.length - 1].id : null };
  }

  async pruneAuditBatch(olderThanIso: string, limit: number): Promise<number> {
    return this.count('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < $1 ORDER BY id LIMIT $2)', [olderThanIso, limit]);
  }

  // Periodic caps, as on SQLite

  async quotaBase(customerId: string, scope: LimitScope, entityId: string, periodStart: number): Promise<QuotaBase | undefined> {
    const r = await this.row<{ up: string; down: string }>('SELECT up, down FROM quota_bases WHERE customer_id = $1 AND scope = $2 AND entity_id = $3 AND period_start = $4', [customerId, scope, entityId, periodStart]);
    return r ? { up: Number(r.up), down: Number(r.down) } : undefined;
  }

  async snapshotQuotaBases(customerId: string, scope: LimitScope, periodStart: number, usedSince?: number): Promise<number> {
    const sql = quotaSnapshotSql(scope, usedSince !== undefined, '$');
    return this.count(sql, usedSince === undefined ? [periodStart, customerId] : [periodStart, usedSince, usedSince, customerId]);
  }

  async pruneQuotaBases(before: number): Promise<number> {
    return this.count('DELETE FROM quota_bases WHERE period_start > 0 AND period_start < $1', [before]);
  }

  async periodicLimits(): Promise<Array<{ customer_id: string; scope: LimitScope; values: LimitValues }>> {
    const rows = await this.rows<{ customer_id: string; scope: LimitScope; fields: string }>(`SELECT customer_id, scope, fields FROM limits WHERE fields LIKE '%reset_period%'`);
    return rows.map((r) => ({ customer_id: r.customer_id, scope: r.scope, values: JSON.parse(r.fields) as LimitValues })).filter((r) => r.values.reset_period && r.values.reset_period !== 'none');
  }
}

function pgUsageWhere(q: UsageQuery, args: unknown[]): string {
  const add = (v: unknown) => {
    args.push(v);
    return `$${args.length}`;
  };
  const where = [`customer_id = ${add(q.customer_id)}`, `step = ANY(${add(q.steps)}::text[])`, `start >= ${add(q.from)}`, `start < ${add(q.to)}`];
  for (const key of ['client_id', 'session_id', 'zone', 'node'] as const) {
    const v = q[key];
    if (v !== undefined) where.push(`${key} = ${add(v)}`);
  }
  return where.join(' AND ');
}

// Compile-time proof that PgStore keeps the SQLite Store's shapes.
const _sameShapes = (p: PgStore): AsyncStoreApi => p;
void _sameShapes;
