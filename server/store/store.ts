// All SQL of the service. Synchronous (node:sqlite): every method is one statement or one
// transaction, committed before it returns, so an acknowledged write survives a crash.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { EventInsert, LimitScope, LimitValues, RuntimePatch, SessionRow, SessionStatus } from '../domain.ts';
import type { LimitsRecord, SessionEvent } from '../contract/schemas.ts';
import { isoNow } from '../time.ts';
import { preparedStatements } from './db.ts';
import { allocate, CLAIM_WINDOW_MS, releaseRow, type Grant, type GrantRequest, type GrantRow } from './grants.ts';
import { NODE_SILENT_SECONDS, REPAIRED_STATUS_SQL, repairEvents, type NodeHello, type RepairedEvent, type RepairedRow } from './repair.ts';

export type Role = 'owner' | 'agent';
export interface TokenInfo {
  id: string;
  customer_id: string;
  customer_name: string;
  role: Role;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface SessionFilter {
  client_id?: string;
  status?: SessionStatus;
  zone?: string;
}

export interface EventFilter {
  sessionIds?: string[];
  types?: string[];
}

const TOKEN_PREFIX = 'vad_';
/** Node tokens look different from API tokens and live in another table: never interchangeable. */
export const NODE_TOKEN_PREFIX = 'vadn_';
/** A zone has active nodes when one of its nodes was in contact within this many seconds. */
export const NODE_UP_SECONDS = 10;

/** A data-plane node of the catalogue (the same shape from SQLite and from PostgreSQL). */
/** The fields of a limits record that are not limits. */
const RECORD_META = new Set(['id', 'created_at', 'updated_at']);

/** Where a periodic cap's period started for one entity: its lifetime totals then. */
export interface QuotaBase {
  up: number;
  down: number;
}

/** One change to record in the audit trail (server/audit.ts). */
export interface AuditInsert {
  customer_id: string;
  created_at: string;
  /** The API token's id (never the token); null for the command line and the server itself. */
  actor_token_id: string | null;
  actor_role: 'owner' | 'agent' | 'cli' | 'server';
  action: string;
  target_type: string;
  target_id: string;
  session_id: string | null;
  client_id: string | null;
  before: unknown;
  after: unknown;
}

export interface AuditEntry {
  id: number;
  created_at: string;
  actor: { token_id: string | null; role: string };
  action: string;
  target: { type: string; id: string };
  session_id: string | null;
  client_id: string | null;
  before: unknown;
  after: unknown;
}

export interface AuditFilter {
  session_id?: string;
  client_id?: string;
  action?: string;
  /** Only these actions (the agent's view: server/audit/redact.ts). */
  actions?: readonly string[];
  actor_token_id?: string;
  /** ISO times: from inclusive, to exclusive. */
  from?: string;
  to?: string;
}

type RawAudit = {
  id: number;
  created_at: string;
  actor_token_id: string | null;
  actor_role: string;
  action: string;
  target_type: string;
  target_id: string;
  session_id: string | null;
  client_id: string | null;
  before_json: string | null;
  after_json: string | null;
};

const parseJson = (t: string | null): unknown => (t === null ? null : JSON.parse(t));

export function toAuditEntry(r: RawAudit): AuditEntry {
  return {
    id: Number(r.id),
    created_at: r.created_at,
    actor: { token_id: r.actor_token_id, role: r.actor_role },
    action: r.action,
    target: { type: r.target_type, id: r.target_id },
    session_id: r.session_id,
    client_id: r.client_id,
    before: parseJson(r.before_json),
    after: parseJson(r.after_json),
  };
}

/** The WHERE clause of an audit read; `ph(i)` writes the i-th placeholder (SQLite `?`, PostgreSQL `$i`). */
export function auditWhere(customerId: string, f: AuditFilter, beforeId: number | undefined, ph: (i: number) => string): { where: string; args: (string | number)[] } {
  const args: (string | number)[] = [customerId];
  const where = [`customer_id = ${ph(1)}`];
  const add = (sql: string, v: string | number) => {
    args.push(v);
    where.push(sql.replace('?', ph(args.length)));
  };
  if (f.session_id !== undefined) add('session_id = ?', f.session_id);
  if (f.client_id !== undefined) add('client_id = ?', f.client_id);
  if (f.action !== undefined) add('action = ?', f.action);
  if (f.actions !== undefined) {
    const marks = f.actions.map((a) => {
      args.push(a);
      return ph(args.length);
    });
    where.push(marks.length ? `action IN (${marks.join(', ')})` : 'FALSE');
  }
  if (f.actor_token_id !== undefined) add('actor_token_id = ?', f.actor_token_id);
  if (f.from !== undefined) add('created_at >= ?', f.from);
  if (f.to !== undefined) add('created_at < ?', f.to);
  if (beforeId !== undefined) add('id < ?', beforeId);
  return { where: where.join(' AND '), args };
}

const AUDIT_COLUMNS = 'id, created_at, actor_token_id, actor_role, action, target_type, target_id, session_id, client_id, before_json, after_json';
const AUDIT_VALUES = (a: AuditInsert): (string | null)[] => [
  a.customer_id, a.created_at, a.actor_token_id, a.actor_role, a.action, a.target_type, a.target_id, a.session_id, a.client_id,
  a.before === undefined ? null : JSON.stringify(a.before), a.after === undefined ? null : JSON.stringify(a.after),
];
export const AUDIT_INSERT_COLUMNS = 'customer_id, created_at, actor_token_id, actor_role, action, target_type, target_id, session_id, client_id, before_json, after_json';
export { AUDIT_COLUMNS, AUDIT_VALUES };

/** What one report of a node adds to one session (store.applyNodeReport). */
export interface NodeReportAdd {
  id: string;
  uploaded_bytes: number;
  downloaded_bytes: number;
  status?: SessionStatus;
  duration?: number;
  connections?: number;
}

// Usage history: traffic buckets per session and node (server/usage/history.ts).
export type UsageStep = 'minute' | 'hour' | 'day';
export const USAGE_STEP_MS: Record<UsageStep, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Bytes one session moved through one node within one minute (start: epoch ms, minute-aligned). */
export interface UsageAdd {
  session_id: string;
  node: string;
  start: number;
  uploaded_bytes: number;
  downloaded_bytes: number;
}

/** A read of the history: rows of `steps` (none coarser than `stepMs`) in [from, to), summed per `stepMs`. */
export interface UsageQuery {
  customer_id: string;
  client_id?: string;
  session_id?: string;
  zone?: string;
  node?: string;
  from: number;
  to: number;
  stepMs: number;
  steps: UsageStep[];
}

export interface UsageSum {
  uploaded_bytes: number;
  downloaded_bytes: number;
}

function usageWhere(q: UsageQuery): { where: string; args: (string | number)[] } {
  const where = ['customer_id = ?', `step IN (${q.steps.map(() => '?').join(',')})`, 'start >= ?', 'start < ?'];
  const args: (string | number)[] = [q.customer_id, ...q.steps, q.from, q.to];
  for (const key of ['client_id', 'session_id', 'zone', 'node'] as const) {
    const v = q[key];
    if (v !== undefined) {
      where.push(`${key} = ?`);
      args.push(v);
    }
  }
  return { where: where.join(' AND '), args };
}

/** An up node's geo relay listener (store.relayNodes). */
export interface RelayNode {
  id: string;
  name: string;
  zone: string;
  public_host: string;
  relay_port: number;
  relay_pcs: string;
  token_hash: string;
}

export interface NodeInfo {
  id: string;
  name: string;
  zone: string;
  public_host: string;
  vless_ws_port: number | null;
  vless_tcp_port: number | null;
  proxy_port: number | null;
  token_prefix: string;
  created_at: string;
  /** ISO time of the node's last contact, null before the first. */
  last_contact: string | null;
  /** In contact within the up window (NODE_UP_SECONDS). */
  up: boolean;
  /** Its VLESS and proxy listeners serve TLS (as it last reported). */
  tls: boolean;
  /** SHA-256 of its self-signed certificate (links' `pcs`); null for a CA-signed one or without TLS. */
  tls_pcs: string | null;
}

/** What a node reports of its listeners beyond their ports (store.setNodeListeners). */
export interface NodeListeners {
  relay_port: number | null;
  relay_pcs: string | null;
  tls: boolean;
  tls_pcs: string | null;
}

export interface NodePorts {
  vless_ws_port?: number | null;
  vless_tcp_port?: number | null;
  proxy_port?: number | null;
}

type RawNode = Omit<NodeInfo, 'up' | 'tls'> & { tls: number | boolean };
const NODE_COLUMNS = 'id, name, zone, public_host, vless_ws_port, vless_tcp_port, proxy_port, token_prefix, created_at, last_contact, tls, tls_pcs';
/** A node_grants row as grants.ts reads it (GrantRow). */
const GRANT_COLUMNS = 'node_id, used_up, used_down, granted_up, granted_down, gen';
const upSince = () => new Date(Date.now() - NODE_UP_SECONDS * 1000).toISOString();
function toNode(r: RawNode, since: string): NodeInfo {
  return { ...r, tls: Boolean(r.tls), up: r.last_contact !== null && r.last_contact > since };
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A sessions row as SQLite returns it: the two flags are stored as 0/1, plus the paging key. */
type RawSession = Omit<SessionRow, 'reusable' | 'paused'> & { reusable: number; paused: number; seq: number };

function toSessionRow(r: RawSession): SessionRow {
  const { seq: _seq, reusable, paused, ...rest } = r;
  return { ...rest, reusable: reusable === 1, paused: paused === 1 };
}

const SESSION_COLUMNS =
  'seq, id, customer_id, client_id, zone, reusable, paused, status, uploaded_bytes, downloaded_bytes, duration, connections, created_at, expires_at';

/**
 * The INSERT that records quota bases (QuotaBase) for every entity of a scope of one customer:
 * its stored lifetime totals, minus, for a rolling window, its traffic in the usage history since
 * the window's start. Parameters, in order: period start, [window start, window start,]
 * customer id. Fixed periods keep the first base recorded; rolling windows overwrite it. The
 * same text runs on SQLite and PostgreSQL (placeholders $1.. are turned into ? for SQLite).
 */
export function quotaSnapshotSql(scope: LimitScope, rolling: boolean, _style: '?' | '$'): string {
  const entity = scope === 'global' ? 's.customer_id' : scope === 'client' ? 's.client_id' : 's.id';
  const match = scope === 'global' ? '' : scope === 'client' ? ' AND u.client_id = s.client_id' : ' AND u.session_id = s.id';
  const used = (col: string, p: string) => (rolling ? `(SELECT COALESCE(SUM(u.${col}), 0) FROM usage_buckets u WHERE u.customer_id = s.customer_id AND u.start >= ${p}${match})` : '0');
  const sum = (col: string) => (scope === 'session' ? `s.${col}` : `SUM(s.${col})`);
  const p = rolling ? { up: 'CAST($2 AS BIGINT)', down: 'CAST($3 AS BIGINT)', customer: '$4' } : { up: '', down: '', customer: '$2' };
  const up = rolling ? `${sum('uploaded_bytes')} - ${used('uploaded_bytes', p.up)}` : sum('uploaded_bytes');
  const down = rolling ? `${sum('downloaded_bytes')} - ${used('downloaded_bytes', p.down)}` : sum('downloaded_bytes');
  return `INSERT INTO quota_bases (customer_id, scope, entity_id, period_start, up, down)
    SELECT s.customer_id, '${scope}', ${entity}, CAST($1 AS BIGINT), ${up}, ${down}
    FROM sessions s WHERE s.customer_id = ${p.customer}${scope === 'session' ? " AND s.status <> 'ended'" : ''}
    ${scope === 'session' ? '' : `GROUP BY s.customer_id${scope === 'client' ? ', s.client_id' : ''}`}
    ON CONFLICT (customer_id, scope, entity_id, period_start) DO ${rolling ? 'UPDATE SET up = excluded.up, down = excluded.down' : 'NOTHING'}`;
}

export class Store {
  readonly db: DatabaseSync;
  private readonly q: (sql: string) => StatementSync;
  /** Bumped whenever this Store creates or revokes a token (caches of token look-ups watch it). */
  tokenGeneration = 0;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.q = preparedStatements(db);
  }


  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  /** Changes when another connection (another process) commits to the database. */
  dataVersion(): number {
    return (this.q('PRAGMA data_version').get() as { data_version: number }).data_version;
  }

  // Customers and tokens

  countCustomers(): number {
    return (this.q('SELECT COUNT(*) AS n FROM customers').get() as { n: number }).n;
  }

  ensureCustomer(name: string): { id: string; created: boolean } {
    const found = this.q('SELECT id FROM customers WHERE name = ?').get(name) as { id: string } | undefined;
    if (found) return { id: found.id, created: false };
    const id = randomUUID();
    this.q('INSERT INTO customers (id, name, created_at) VALUES (?, ?, ?)').run(id, name, isoNow());
    return { id, created: true };
  }

  /** Issues a token and returns it in plain text; only its SHA-256 is stored. */
  createToken(customerName: string, role: Role): { token: string; info: TokenInfo } {
    return this.transaction(() => {
      const customer = this.ensureCustomer(customerName);
      const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
      const id = randomUUID();
      const prefix = token.slice(0, TOKEN_PREFIX.length + 6);
      const created_at = isoNow();
      this.tokenGeneration++;
      this.q('INSERT INTO tokens (id, customer_id, role, hash, prefix, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
        id,
        customer.id,
        role,
        hashToken(token),
        prefix,
        created_at,
      );
      return {
        token,
        info: { id, customer_id: customer.id, customer_name: customerName, role, prefix, created_at, revoked_at: null },
      };
    });
  }

  findToken(token: string): TokenInfo | undefined {
    return this.q(
      `SELECT t.id, t.customer_id, c.name AS customer_name, t.role, t.prefix, t.created_at, t.revoked_at
       FROM tokens t JOIN customers c ON c.id = t.customer_id
       WHERE t.hash = ? AND t.revoked_at IS NULL`,
    ).get(hashToken(token)) as TokenInfo | undefined;
  }

  listTokens(): TokenInfo[] {
    return this.q(
      `SELECT t.id, t.customer_id, c.name AS customer_name, t.role, t.prefix, t.created_at, t.revoked_at
       FROM tokens t JOIN customers c ON c.id = t.customer_id ORDER BY t.created_at`,
    ).all() as unknown as TokenInfo[];
  }

  /** True while the token with this id exists and is not revoked. */
  isTokenActive(id: string): boolean {
    return this.q('SELECT 1 AS ok FROM tokens WHERE id = ? AND revoked_at IS NULL').get(id) !== undefined;
  }

  /** Revokes by token id, by the plain token, or by its printed prefix when that is unique. */
  revokeToken(ref: string): TokenInfo | undefined {
    const candidates = this.q(
      `SELECT t.id, t.customer_id, c.name AS customer_name, t.role, t.prefix, t.created_at, t.revoked_at
       FROM tokens t JOIN customers c ON c.id = t.customer_id
       WHERE t.revoked_at IS NULL AND (t.id = ? OR t.hash = ? OR t.prefix = ?)`,
    ).all(ref, hashToken(ref), ref) as unknown as TokenInfo[];
    if (candidates.length !== 1) return undefined;
    const t = candidates[0];
    const revokedAt = isoNow();
    this.q('UPDATE tokens SET revoked_at = ? WHERE id = ?').run(revokedAt, t.id);
    this.tokenGeneration++;
    return { ...t, revoked_at: revokedAt };
  }

  // Sessions

  insertSession(s: { id: string; customer_id: string; client_id: string; zone: string; reusable: boolean; created_at: string; expires_at?: string | null }): SessionRow {
    this.q(
      `INSERT INTO sessions (id, customer_id, client_id, zone, connection_type, reusable, created_at, expires_at)
       VALUES (?, ?, ?, ?, 'vless', ?, ?, ?)`,
    ).run(s.id, s.customer_id, s.client_id, s.zone, s.reusable ? 1 : 0, s.created_at, s.expires_at ?? null);
    return this.getSession(s.id)!;
  }

  /**
   * Ends the sessions whose expires_at has passed and that no connection carries (created or
   * idle; an active one is ended by the data plane carrying it, which cuts its connections and
   * publishes session_end). Idempotent, safe from several processes. Returns how many.
   */
  expireIdleSessions(nowIso: string): number {
    return Number(
      this.q(`UPDATE sessions SET status = 'ended' WHERE expires_at IS NOT NULL AND expires_at <= ? AND status IN ('created', 'idle')`).run(nowIso).changes,
    );
  }

  getSession(id: string): SessionRow | undefined {
    const r = this.q(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ?`).get(id) as RawSession | undefined;
    return r && toSessionRow(r);
  }

  /** The session only when it belongs to this customer: another customer's id is "not found". */
  getSessionOf(customerId: string, id: string): SessionRow | undefined {
    const r = this.q(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ? AND customer_id = ?`).get(id, customerId) as
      | RawSession
      | undefined;
    return r && toSessionRow(r);
  }

  /** Newest first; `cursor` is the opaque seq of the last row of the previous page. */
  listSessions(customerId: string, filter: SessionFilter, limit: number, beforeSeq?: number): { rows: SessionRow[]; nextSeq: number | null } {
    const where = ['customer_id = ?'];
    const args: (string | number)[] = [customerId];
    if (filter.client_id !== undefined) {
      where.push('client_id = ?');
      args.push(filter.client_id);
    }
    if (filter.status !== undefined) {
      where.push('status = ?');
      args.push(filter.status);
    }
    if (filter.zone !== undefined) {
      where.push('zone = ?');
      args.push(filter.zone);
    }
    if (beforeSeq !== undefined) {
      where.push('seq < ?');
      args.push(beforeSeq);
    }
    args.push(limit + 1);
    const raw = this.q(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`).all(
      ...args,
    ) as unknown as RawSession[];
    const more = raw.length > limit;
    const page = more ? raw.slice(0, limit) : raw;
    return { rows: page.map(toSessionRow), nextSeq: more ? page[page.length - 1].seq : null };
  }

  setPaused(id: string, paused: boolean): void {
    this.q('UPDATE sessions SET paused = ? WHERE id = ?').run(paused ? 1 : 0, id);
  }

  saveRuntime(id: string, patch: RuntimePatch): void {
    const sets: string[] = [];
    const args: (string | number)[] = [];
    for (const key of ['status', 'uploaded_bytes', 'downloaded_bytes', 'duration', 'connections'] as const) {
      const v = patch[key];
      if (v !== undefined) {
        sets.push(`${key} = ?`);
        args.push(v);
      }
    }
    if (sets.length === 0) return;
    args.push(id);
    // At most 31 column sets: the statement cache stays small, and the counter flush (every
    // open session, twice a second) does not compile SQL each time.
    this.q(`UPDATE sessions SET ${sets.join(', ')} WHERE id = ?`).run(...args);
  }

  sumCounters(customerId: string, clientId?: string): { uploaded_bytes: number; downloaded_bytes: number } {
    const r = (
      clientId === undefined
        ? this.q('SELECT COALESCE(SUM(uploaded_bytes),0) AS u, COALESCE(SUM(downloaded_bytes),0) AS d FROM sessions WHERE customer_id = ?').get(customerId)
        : this.q(
            'SELECT COALESCE(SUM(uploaded_bytes),0) AS u, COALESCE(SUM(downloaded_bytes),0) AS d FROM sessions WHERE customer_id = ? AND client_id = ?',
          ).get(customerId, clientId)
    ) as { u: number; d: number };
    return { uploaded_bytes: r.u, downloaded_bytes: r.d };
  }

  // Limits

  getLimitsRecord(customerId: string, scope: LimitScope): LimitsRecord | undefined {
    const r = this.q('SELECT id, fields, created_at, updated_at FROM limits WHERE customer_id = ? AND scope = ?').get(customerId, scope) as
      | { id: string; fields: string; created_at: string; updated_at: string }
      | undefined;
    if (!r) return undefined;
    return { id: r.id, created_at: r.created_at, updated_at: r.updated_at, ...(JSON.parse(r.fields) as LimitValues) };
  }

  getLimits(customerId: string, scope: LimitScope): LimitValues | undefined {
    const r = this.q('SELECT fields FROM limits WHERE customer_id = ? AND scope = ?').get(customerId, scope) as { fields: string } | undefined;
    return r ? (JSON.parse(r.fields) as LimitValues) : undefined;
  }

  /** Merges `patch` into the record (null removes a field), creating it on first use. */
  patchLimits(customerId: string, scope: LimitScope, patch: Record<string, number | string | null>): LimitsRecord {
    return this.transaction(() => {
      const now = isoNow();
      const existing = this.getLimitsRecord(customerId, scope);
      const fields: Record<string, number | string> = {};
      if (existing) {
        for (const [k, v] of Object.entries(existing)) if (!RECORD_META.has(k) && (typeof v === 'number' || typeof v === 'string')) fields[k] = v;
      }
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete fields[k];
        else fields[k] = v;
      }
      if (existing) {
        this.q('UPDATE limits SET fields = ?, updated_at = ? WHERE customer_id = ? AND scope = ?').run(JSON.stringify(fields), now, customerId, scope);
      } else {
        this.q('INSERT INTO limits (customer_id, scope, id, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(
          customerId,
          scope,
          randomUUID(),
          JSON.stringify(fields),
          now,
          now,
        );
      }
      return this.getLimitsRecord(customerId, scope)!;
    });
  }

  deleteLimits(customerId: string, scope: LimitScope): boolean {
    return this.q('DELETE FROM limits WHERE customer_id = ? AND scope = ?').run(customerId, scope).changes > 0;
  }

  // Events

  insertEvent(e: EventInsert): SessionEvent {
    const r = this.q(
      `INSERT INTO events (customer_id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(e.customer_id, e.session_id, e.event_type, e.created_at, e.duration, e.downloaded_bytes, e.uploaded_bytes);
    return {
      id: Number(r.lastInsertRowid),
      session_id: e.session_id,
      event_type: e.event_type,
      created_at: e.created_at,
      duration: e.duration,
      downloaded_bytes: e.downloaded_bytes,
      uploaded_bytes: e.uploaded_bytes,
    };
  }

  /** Stored events of a customer with id > afterId, oldest first, at most `limit`. */
  private eventWhere(customerId: string, filter: EventFilter): { where: string[]; args: (string | number)[] } {
    const where = ['customer_id = ?'];
    const args: (string | number)[] = [customerId];
    if (filter.sessionIds?.length) {
      where.push(`session_id IN (${filter.sessionIds.map(() => '?').join(',')})`);
      args.push(...filter.sessionIds);
    }
    if (filter.types?.length) {
      where.push(`event_type IN (${filter.types.map(() => '?').join(',')})`);
      args.push(...filter.types);
    }
    return { where, args };
  }

  eventsAfter(customerId: string, afterId: number, filter: EventFilter, limit: number): SessionEvent[] {
    const { where, args } = this.eventWhere(customerId, filter);
    return this.db
      .prepare(
        `SELECT id, session_id, event_type, created_at, duration, downloaded_bytes, uploaded_bytes
         FROM events WHERE ${where.join(' AND ')} AND id > ? ORDER BY id LIMIT ?`,
      )
      .all(...args, afterId, limit) as unknown as SessionEvent[];
  }

  /** The id after which exactly the `count` newest matching events follow (0 when there are fewer). */
  idBeforeNewest(customerId: string, filter: EventFilter, count: number): number {
    const { where, args } = this.eventWhere(customerId, filter);
    const row = this.db
      .prepare(`SELECT id FROM events WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT 1 OFFSET ?`)
      .get(...args, count) as { id: number } | undefined;
    return row?.id ?? 0;
  }

  pruneEvents(olderThanIso: string): number {
    return Number(this.q('DELETE FROM events WHERE created_at < ?').run(olderThanIso).changes);
  }

  // Nodes of the catalogue and session placement (the same operations as PgStore's)

  /** Adds a node and returns its token in plain text once; only its SHA-256 is stored. */
  addNode(n: { name: string; zone: string; public_host: string } & NodePorts): { token: string; node: NodeInfo } {
    const token = NODE_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const id = randomUUID();
    this.q(
      `INSERT INTO nodes (id, name, zone, public_host, vless_ws_port, vless_tcp_port, proxy_port, token_hash, token_prefix, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(id, n.name, n.zone, n.public_host, n.vless_ws_port ?? null, n.vless_tcp_port ?? null, n.proxy_port ?? null, hashToken(token), token.slice(0, NODE_TOKEN_PREFIX.length + 6), isoNow());
    return { token, node: this.getNode(id)! };
  }

  private node(where: string, arg: string): NodeInfo | undefined {
    const r = this.q(`SELECT ${NODE_COLUMNS} FROM nodes WHERE ${where} = ?`).get(arg) as RawNode | undefined;
    return r && toNode(r, upSince());
  }

  getNode(id: string): NodeInfo | undefined {
    return this.node('id', id);
  }

  getNodeByName(name: string): NodeInfo | undefined {
    return this.node('name', name);
  }

  /** The node a node token belongs to (API tokens never match: another table, another prefix). */
  findNodeByToken(token: string): NodeInfo | undefined {
    if (!token.startsWith(NODE_TOKEN_PREFIX)) return undefined;
    return this.node('token_hash', hashToken(token));
  }

  listNodes(): NodeInfo[] {
    const since = upSince();
    return (this.q(`SELECT ${NODE_COLUMNS} FROM nodes ORDER BY zone, name`).all() as unknown as RawNode[]).map((r) => toNode(r, since));
  }

  /** Up nodes of a zone, the least loaded (fewest placed sessions) first. */
  upNodes(zone: string): NodeInfo[] {
    const since = upSince();
    const rows = this.q(
      `SELECT ${NODE_COLUMNS.split(', ').map((c) => `n.${c}`).join(', ')} FROM nodes n
       WHERE n.zone = ? AND n.last_contact > ?
       ORDER BY (SELECT COUNT(*) FROM session_placements p WHERE p.node_id = n.id), n.name`,
    ).all(zone, since) as unknown as RawNode[];
    return rows.map((r) => toNode(r, since));
  }

  /** Records a node's geo relay listener and its listeners' TLS (certificate pins), as its reports say. */
  setNodeListeners(id: string, l: NodeListeners): void {
    this.q('UPDATE nodes SET relay_port = ?, relay_pcs = ?, tls = ?, tls_pcs = ? WHERE id = ?').run(l.relay_port, l.relay_pcs, l.tls ? 1 : 0, l.tls_pcs, id);
  }

  /** Up nodes with a geo relay listener, with their token hash (relay grants are keyed by it). */
  relayNodes(): RelayNode[] {
    return this.q(
      'SELECT id, name, zone, public_host, relay_port, relay_pcs, token_hash FROM nodes WHERE last_contact > ? AND relay_port IS NOT NULL AND relay_pcs IS NOT NULL ORDER BY name',
    ).all(upSince()) as unknown as RelayNode[];
  }

  /** Zones with at least one up node. */
  activeNodeZones(): string[] {
    return (this.q('SELECT DISTINCT zone FROM nodes WHERE last_contact > ?').all(upSince()) as { zone: string }[]).map((r) => r.zone);
  }

  /** Records a node's contact (and the ports it reports). */
  touchNode(id: string, ports?: NodePorts): boolean {
    const p = ports ?? {};
    const r = this.q(
      `UPDATE nodes SET last_contact = ?,
         vless_ws_port = CASE WHEN ? THEN ? ELSE vless_ws_port END,
         vless_tcp_port = CASE WHEN ? THEN ? ELSE vless_tcp_port END,
         proxy_port = CASE WHEN ? THEN ? ELSE proxy_port END
       WHERE id = ?`,
    ).run(isoNow(), 'vless_ws_port' in p ? 1 : 0, p.vless_ws_port ?? null, 'vless_tcp_port' in p ? 1 : 0, p.vless_tcp_port ?? null, 'proxy_port' in p ? 1 : 0, p.proxy_port ?? null, id);
    return r.changes > 0;
  }

  /**
   * Detaches a node: what it carried is repaired (crash repair: its active sessions go idle or
   * end, with their events), its sessions move to an up node of its zone where there is one,
   * the other placements go with it.
   */
  removeNode(name: string): NodeInfo | undefined {
    return this.transaction(() => {
      const node = this.getNodeByName(name);
      if (!node) return undefined;
      this.repairPlaced(node.id, Infinity);
      this.replaceFrom(node.id, node.zone);
      this.q('DELETE FROM session_placements WHERE node_id = ?').run(node.id);
      this.q('DELETE FROM nodes WHERE id = ?').run(node.id);
      return node;
    });
  }

  /** The last report seq applied for the node (0: none; undefined: no such node). */
  nodeReportSeq(nodeId: string): number | undefined {
    return (this.q('SELECT report_seq FROM nodes WHERE id = ?').get(nodeId) as { report_seq: number } | undefined)?.report_seq;
  }

  /**
   * Applies one report of a node (`node run`) at most once: when `seq` is above the last one
   * applied for the node, ADDS the byte counts to the sessions placed on it (others are
   * skipped), sets their other runtime fields and records `seq`, in one transaction. Returns
   * false (and changes nothing) for a report already applied.
   */
  /**
   * Applies one report of a node at most once: its counter additions, its events and the node's
   * last applied seq in one transaction, so a report resent after a lost acknowledgement (or a
   * crash before it) adds neither bytes nor events twice, and none is lost. Returns the stored
   * events (to wake the readers), or false when the seq was already applied.
   */
  applyNodeReport(nodeId: string, seq: number, adds: NodeReportAdd[], events: EventInsert[] = []): SessionEvent[] | false {
    return this.transaction(() => {
      const r = this.q('UPDATE nodes SET report_seq = ? WHERE id = ? AND report_seq < ?').run(seq, nodeId, seq);
      if (Number(r.changes) === 0) return false;
      for (const a of adds) {
        this.q(
          `UPDATE sessions SET uploaded_bytes = uploaded_bytes + ?, downloaded_bytes = downloaded_bytes + ?,
             status = COALESCE(?, status), duration = COALESCE(?, duration), connections = COALESCE(?, connections)
           WHERE id = ? AND id IN (SELECT session_id FROM session_placements WHERE node_id = ? OR moved_from = ?)`,
        ).run(a.uploaded_bytes, a.downloaded_bytes, a.status ?? null, a.duration ?? null, a.connections ?? null, a.id, nodeId, nodeId);
        if (a.uploaded_bytes > 0 || a.downloaded_bytes > 0) {
          // What the node used of its grants (server/store/grants.ts): the client's and the customer's.
          for (const whole of [false, true]) {
            this.q(
              `INSERT INTO node_grants (node_id, customer_id, client_id, used_up, used_down)
                 SELECT ?, customer_id, ${whole ? "''" : 'client_id'}, ?, ? FROM sessions WHERE id = ?
               ON CONFLICT (customer_id, client_id, node_id) DO UPDATE SET used_up = used_up + excluded.used_up, used_down = used_down + excluded.used_down`,
            ).run(nodeId, a.uploaded_bytes, a.downloaded_bytes, a.id);
          }
        }
      }
      return events.map((e) => this.insertEvent(e));
    });
  }

  /** The node (null: a serve data plane) of each active session of a customer (cluster speed shares). */
  activeSessionNodes(customerId: string): Array<{ client_id: string; node_id: string | null }> {
    return this.q(
      `SELECT s.client_id, p.node_id FROM sessions s LEFT JOIN session_placements p ON p.session_id = s.id WHERE s.customer_id = ? AND s.status = 'active'`,
    ).all(customerId) as Array<{ client_id: string; node_id: string | null }>;
  }

  /**
   * Tops up a node's byte grant for a customer (clientId '') or one client, and says what it may
   * still move (server/store/grants.ts), in one transaction.
   */
  grantBytes(nodeId: string, customerId: string, clientId: string, req: GrantRequest): Grant {
    return this.transaction(() => {
      const rows = this.q(`SELECT ${GRANT_COLUMNS} FROM node_grants WHERE customer_id = ? AND client_id = ?`).all(customerId, clientId) as unknown as GrantRow[];
      const t = this.sumCounters(customerId, clientId === '' ? undefined : clientId);
      const { row, grant } = allocate(rows, nodeId, { up: t.uploaded_bytes, down: t.downloaded_bytes }, req);
      this.q(
        `INSERT INTO node_grants (node_id, customer_id, client_id, used_up, used_down, granted_up, granted_down) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (customer_id, client_id, node_id) DO UPDATE SET granted_up = excluded.granted_up, granted_down = excluded.granted_down`,
      ).run(nodeId, customerId, clientId, row.used_up, row.used_down, row.granted_up, row.granted_down);
      return grant;
    });
  }

  /**
   * A node gives back what it holds of a grant beyond KEEP_IDLE (grants.ts releaseRow), when the
   * row is still of generation `gen` (the node's reports before it are applied: the channel
   * handles a node's messages in order). Resolves whether it was released.
   */
  releaseGrant(nodeId: string, customerId: string, clientId: string, gen: number): boolean {
    return this.transaction(() => {
      const r = this.q(`SELECT ${GRANT_COLUMNS} FROM node_grants WHERE customer_id = ? AND client_id = ? AND node_id = ?`).get(customerId, clientId, nodeId) as unknown as GrantRow | undefined;
      if (!r || r.gen !== gen) return false;
      const next = releaseRow(r);
      this.q('UPDATE node_grants SET granted_up = ?, granted_down = ?, gen = ? WHERE customer_id = ? AND client_id = ? AND node_id = ?').run(next.granted_up, next.granted_down, next.gen, customerId, clientId, nodeId);
      return true;
    });
  }

  /**
   * A node asks to open the first connection of a session whose client has max_sessions: granted
   * when fewer than `max` other sessions of the client are active (on this node: those it says
   * are; elsewhere: active in the store, or claimed within CLAIM_WINDOW_MS), and then recorded as
   * claimed, in one transaction, so two nodes asking at once cannot both take the last place.
   */
  claimSession(nodeId: string, sessionId: string, localActive: string[], max: number): boolean {
    return this.transaction(() => {
      const s = this.q('SELECT customer_id, client_id FROM sessions WHERE id = ?').get(sessionId) as { customer_id: string; client_id: string } | undefined;
      if (!s) return false;
      const others = this.q(
        `SELECT s.id, s.status, s.claimed_at, p.node_id FROM sessions s LEFT JOIN session_placements p ON p.session_id = s.id
         WHERE s.customer_id = ? AND s.client_id = ? AND s.id <> ? AND s.status <> 'ended'`,
      ).all(s.customer_id, s.client_id, sessionId) as Array<{ id: string; status: string; claimed_at: number | null; node_id: string | null }>;
      const mine = new Set(localActive);
      const since = Date.now() - CLAIM_WINDOW_MS;
      const active = others.filter((o) => (o.node_id === nodeId ? mine.has(o.id) : o.status === 'active' || (o.claimed_at ?? 0) > since)).length;
      if (active >= max) return false;
      this.q('UPDATE sessions SET claimed_at = ? WHERE id = ?').run(Date.now(), sessionId);
      return true;
    });
  }

  placeSession(sessionId: string, nodeId: string): void {
    this.q(
      `INSERT INTO session_placements (session_id, node_id, placed_at) VALUES (?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE SET node_id = excluded.node_id, placed_at = excluded.placed_at, moved_from = NULL`,
    ).run(sessionId, nodeId, isoNow());
  }

  /** The node carrying a session, if it is placed. */
  placementOf(sessionId: string): string | undefined {
    return (this.q('SELECT node_id FROM session_placements WHERE session_id = ?').get(sessionId) as { node_id: string } | undefined)?.node_id;
  }

  /** The nodes of those of `sessionIds` that are placed on a catalogue node (sessions on `local` have none). */
  placedNodes(sessionIds: string[]): (NodeInfo & { session_id: string })[] {
    if (sessionIds.length === 0) return [];
    const since = upSince();
    const rows = this.db
      .prepare(
        `SELECT p.session_id, ${NODE_COLUMNS.split(', ').map((c) => `n.${c}`).join(', ')}
         FROM session_placements p JOIN nodes n ON n.id = p.node_id WHERE p.session_id IN (${sessionIds.map(() => '?').join(',')})`,
      )
      .all(...sessionIds) as unknown as (RawNode & { session_id: string })[];
    return rows.map((r) => ({ ...toNode(r, since), session_id: r.session_id }));
  }

  // Crash repair (server/cluster/crash-repair.ts)

  /**
   * A node's channel opened with the process id `boot`: the same process as last time
   * ('same'; a repair made while it was silent is forgotten: it carries its sessions again),
   * another one ('new'), or another one after the previous one's sessions were repaired.
   */
  nodeHello(nodeId: string, boot: string): NodeHello {
    const r = this.q('SELECT boot_id, boot_repaired FROM nodes WHERE id = ?').get(nodeId) as { boot_id: string | null; boot_repaired: number } | undefined;
    if (r?.boot_id === boot) {
      if (r.boot_repaired) this.q('UPDATE nodes SET boot_repaired = 0 WHERE id = ? AND boot_id = ?').run(nodeId, boot);
      return 'same';
    }
    return r?.boot_repaired ? 'new_after_repair' : 'new';
  }

  /**
   * A node runs as a new process `boot`: records it and repairs, once (the first caller to
   * record it), the sessions the previous process carried; claims made before `claimsBefore`
   * (epoch ms) are released. False: `boot` was recorded already.
   */
  repairRestartedNode(nodeId: string, boot: string, claimsBefore: number): RepairedEvent[] | false {
    return this.transaction(() => {
      const r = this.q('UPDATE nodes SET boot_id = ?, boot_repaired = 0 WHERE id = ? AND (boot_id IS NULL OR boot_id <> ?)').run(boot, nodeId, boot);
      if (Number(r.changes) === 0) return false;
      return this.repairPlaced(nodeId, claimsBefore);
    });
  }

  /**
   * Nodes without contact for NODE_SILENT_SECONDS: their active sessions are repaired (idle or
   * ended, with session_stats and session_end; claims released) and their sessions that did not
   * end move to an up node of the zone when there is one. Returns the events stored.
   */
  repairSilentNodes(): RepairedEvent[] {
    const find = () =>
      this.q(
        `SELECT DISTINCT n.id, n.zone FROM nodes n JOIN session_placements p ON p.node_id = n.id JOIN sessions s ON s.id = p.session_id
         WHERE n.last_contact < ? AND (s.status = 'active' OR s.claimed_at IS NOT NULL OR (s.status <> 'ended' AND EXISTS (
           SELECT 1 FROM nodes u WHERE u.zone = n.zone AND u.id <> n.id AND u.last_contact > ?)))`,
      ).all(new Date(Date.now() - NODE_SILENT_SECONDS * 1000).toISOString(), upSince()) as Array<{ id: string; zone: string }>;
    if (find().length === 0) return []; // no write lock taken when there is nothing to do
    return this.transaction(() => {
      const out: RepairedEvent[] = [];
      for (const n of find()) {
        const events = this.repairPlaced(n.id, Infinity);
        if (events.length) this.q('UPDATE nodes SET boot_repaired = 1 WHERE id = ?').run(n.id);
        out.push(...events);
        this.replaceFrom(n.id, n.zone);
      }
      return out;
    });
  }

  /** The active sessions placed on a node go idle or end, with their events; claims before `claimsBefore` are released. */
  private repairPlaced(nodeId: string, claimsBefore: number): RepairedEvent[] {
    const rows = this.q(
      `UPDATE sessions SET status = ${REPAIRED_STATUS_SQL('reusable = 1')}, claimed_at = NULL
       WHERE status = 'active' AND id IN (SELECT session_id FROM session_placements WHERE node_id = ?)
       RETURNING seq, id, customer_id, duration, uploaded_bytes, downloaded_bytes`,
    ).all(nodeId) as unknown as RepairedRow[];
    this.q('UPDATE sessions SET claimed_at = NULL WHERE claimed_at < ? AND id IN (SELECT session_id FROM session_placements WHERE node_id = ?)').run(
      Number.isFinite(claimsBefore) ? claimsBefore : Number.MAX_SAFE_INTEGER,
      nodeId,
    );
    const inserts = repairEvents(rows, isoNow());
    return inserts.map((e) => ({ customerId: e.customer_id, event: this.insertEvent(e) }));
  }

  /** The sessions of a node that did not end move to the least-loaded up node of its zone, if any. */
  private replaceFrom(nodeId: string, zone: string): void {
    const targets = this.upNodes(zone).filter((n) => n.id !== nodeId);
    if (targets.length === 0) return;
    const load = new Map(targets.map((n) => [n.id, (this.q('SELECT COUNT(*) AS c FROM session_placements WHERE node_id = ?').get(n.id) as { c: number }).c]));
    const ids = this.q(
      `SELECT p.session_id FROM session_placements p JOIN sessions s ON s.id = p.session_id WHERE p.node_id = ? AND s.status <> 'ended' ORDER BY s.seq`,
    ).all(nodeId) as Array<{ session_id: string }>;
    for (const { session_id } of ids) {
      const to = [...load].sort((a, b) => a[1] - b[1])[0];
      this.q('UPDATE session_placements SET node_id = ?, placed_at = ?, moved_from = node_id WHERE session_id = ? AND node_id = ?').run(to[0], isoNow(), session_id, nodeId);
      load.set(to[0], to[1] + 1);
    }
  }

  /** Sessions moved away from a node (crash repair): its late reports still add their bytes. */
  sessionsMovedFrom(nodeId: string): SessionRow[] {
    return this.placedBy('moved_from', nodeId);
  }

  /** Sessions placed on a node (a node may act only on these). */
  sessionsOnNode(nodeId: string): SessionRow[] {
    return this.placedBy('node_id', nodeId);
  }

  private placedBy(column: 'node_id' | 'moved_from', nodeId: string): SessionRow[] {
    const raw = this.q(
      `SELECT ${SESSION_COLUMNS.split(', ').map((c) => `s.${c}`).join(', ')}
       FROM session_placements p JOIN sessions s ON s.id = p.session_id WHERE p.${column} = ? ORDER BY s.seq`,
    ).all(nodeId) as unknown as RawSession[];
    return raw.map(toSessionRow);
  }

  // Usage history

  /**
   * Adds each entry to its minute bucket (created at 0 when missing), in one transaction. The
   * session's customer, client and zone are copied from its row; an unknown session adds nothing.
   */
  addUsage(adds: UsageAdd[]): void {
    if (adds.length === 0) return;
    this.transaction(() => {
      const insert = this.q(
        `INSERT INTO usage_buckets (step, start, session_id, node, customer_id, client_id, zone, uploaded_bytes, downloaded_bytes)
         SELECT 'minute', ?, s.id, ?, s.customer_id, s.client_id, s.zone, ?, ? FROM sessions s WHERE s.id = ?
         ON CONFLICT (session_id, step, start, node) DO UPDATE SET
           uploaded_bytes = uploaded_bytes + excluded.uploaded_bytes, downloaded_bytes = downloaded_bytes + excluded.downloaded_bytes`,
      );
      for (const a of adds) insert.run(a.start, a.node, a.uploaded_bytes, a.downloaded_bytes, a.session_id);
    });
  }

  /** The history summed per q.stepMs bucket (only buckets with rows; `start` is epoch ms), oldest first. */
  usageBuckets(q: UsageQuery): ({ start: number } & UsageSum)[] {
    const { where, args } = usageWhere(q);
    return this.q(
      `SELECT (start / CAST(? AS INTEGER)) * CAST(? AS INTEGER) AS start, SUM(uploaded_bytes) AS uploaded_bytes, SUM(downloaded_bytes) AS downloaded_bytes
       FROM usage_buckets WHERE ${where} GROUP BY 1 ORDER BY 1`,
    ).all(q.stepMs, q.stepMs, ...args) as unknown as ({ start: number } & UsageSum)[];
  }

  /** The clients that moved the most bytes (both directions) in the range, at most `limit`. */
  usageTopClients(q: UsageQuery, limit: number): ({ client_id: string } & UsageSum)[] {
    const { where, args } = usageWhere(q);
    return this.q(
      `SELECT client_id, SUM(uploaded_bytes) AS uploaded_bytes, SUM(downloaded_bytes) AS downloaded_bytes
       FROM usage_buckets WHERE ${where} GROUP BY client_id ORDER BY SUM(uploaded_bytes) + SUM(downloaded_bytes) DESC, client_id LIMIT ?`,
    ).all(...args, limit) as unknown as ({ client_id: string } & UsageSum)[];
  }

  /**
   * Rolls at most `limit` of the oldest `from` rows starting before `olderThan` up into `to`
   * buckets (added to what is there) and deletes them, in one transaction; returns how many
   * rows it moved. Any subset of rows may be moved at a time: the sums stay the same.
   */
  rollupUsage(from: UsageStep, to: UsageStep, olderThan: number, limit: number): number {
    return this.transaction(() => {
      const ids = (this.q('SELECT rowid AS r FROM usage_buckets WHERE step = ? AND start < ? ORDER BY start LIMIT ?').all(from, olderThan, limit) as { r: number }[]).map(
        (x) => x.r,
      );
      if (ids.length === 0) return 0;
      const list = JSON.stringify(ids);
      const ms = USAGE_STEP_MS[to];
      this.q(
        `INSERT INTO usage_buckets (step, start, session_id, node, customer_id, client_id, zone, uploaded_bytes, downloaded_bytes)
         SELECT ?, (start / CAST(? AS INTEGER)) * CAST(? AS INTEGER), session_id, node, customer_id, client_id, zone, SUM(uploaded_bytes), SUM(downloaded_bytes)
         FROM usage_buckets WHERE rowid IN (SELECT value FROM json_each(?))
         GROUP BY 2, session_id, node, customer_id, client_id, zone
         ON CONFLICT (session_id, step, start, node) DO UPDATE SET
           uploaded_bytes = uploaded_bytes + excluded.uploaded_bytes, downloaded_bytes = downloaded_bytes + excluded.downloaded_bytes`,
      ).run(to, ms, ms, list);
      this.q('DELETE FROM usage_buckets WHERE rowid IN (SELECT value FROM json_each(?))').run(list);
      return ids.length;
    });
  }

  /** Deletes at most `limit` of the oldest `step` rows starting before `olderThan`; returns how many. */
  pruneUsage(step: UsageStep, olderThan: number, limit: number): number {
    return Number(
      this.q('DELETE FROM usage_buckets WHERE rowid IN (SELECT rowid FROM usage_buckets WHERE step = ? AND start < ? ORDER BY start LIMIT ?)').run(step, olderThan, limit)
        .changes,
    );
  }

  /** How many history rows there are of each step (tests and diagnostics: the table stays bounded). */
  usageRowCounts(): Record<UsageStep, number> {
    const out: Record<UsageStep, number> = { minute: 0, hour: 0, day: 0 };
    for (const r of this.q('SELECT step, COUNT(*) AS n FROM usage_buckets GROUP BY step').all() as { step: UsageStep; n: number }[]) out[r.step] = r.n;
    return out;
  }

  /** Deletes at most `limit` of the oldest events older than the cutoff; returns how many. One
   *  short statement, so a caller can prune a large backlog in steps (http/retention.ts). */
  pruneEventsBatch(olderThanIso: string, limit: number): number {
    return Number(
      this.q('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < ? ORDER BY id LIMIT ?)').run(olderThanIso, limit).changes,
    );
  }

  // Audit trail

  recordAudit(a: AuditInsert): number {
    return Number(this.q(`INSERT INTO audit_log (${AUDIT_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...AUDIT_VALUES(a)).lastInsertRowid);
  }

  /** Newest first; `beforeId` pages on (the id of the last entry of the previous page). */
  auditEntries(customerId: string, filter: AuditFilter, limit: number, beforeId?: number): { rows: AuditEntry[]; nextId: number | null } {
    const { where, args } = auditWhere(customerId, filter, beforeId, () => '?');
    const raw = this.q(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT ?`).all(...args, limit + 1) as RawAudit[];
    const more = raw.length > limit;
    const rows = raw.slice(0, limit).map(toAuditEntry);
    return { rows, nextId: more ? rows[rows.length - 1].id : null };
  }

  pruneAuditBatch(olderThanIso: string, limit: number): number {
    return Number(this.q('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < ? ORDER BY id LIMIT ?)').run(olderThanIso, limit).changes);
  }


  // Periodic caps: each entity's lifetime totals at the start of its current period.

  quotaBase(customerId: string, scope: LimitScope, entityId: string, periodStart: number): QuotaBase | undefined {
    return this.q('SELECT up, down FROM quota_bases WHERE customer_id = ? AND scope = ? AND entity_id = ? AND period_start = ?').get(customerId, scope, entityId, periodStart) as
      | QuotaBase
      | undefined;
  }

  /**
   * Records the bases of the period starting at `periodStart` for every entity of the scope that
   * has none yet (their stored totals now); with `usedSince` (rolling windows) every base is
   * rewritten as the totals minus the traffic of the usage history since then.
   */
  snapshotQuotaBases(customerId: string, scope: LimitScope, periodStart: number, usedSince?: number): number {
    const sql = quotaSnapshotSql(scope, usedSince !== undefined, '?');
    const args = usedSince === undefined ? [periodStart, customerId] : [periodStart, usedSince, usedSince, customerId];
    return Number(this.q(sql.replace(/\$\d+/g, '?')).run(...args).changes);
  }

  pruneQuotaBases(before: number): number {
    return Number(this.q('DELETE FROM quota_bases WHERE period_start > 0 AND period_start < ?').run(before).changes);
  }


  /** Every limits record whose caps renew (reset_period set and not none): the quota job's work. */
  periodicLimits(): Array<{ customer_id: string; scope: LimitScope; values: LimitValues }> {
    const rows = this.q(`SELECT customer_id, scope, fields FROM limits WHERE fields LIKE '%reset_period%'`).all() as { customer_id: string; scope: LimitScope; fields: string }[];
    return rows.map((r) => ({ customer_id: r.customer_id, scope: r.scope, values: JSON.parse(r.fields) as LimitValues })).filter((r) => r.values.reset_period && r.values.reset_period !== 'none');
  }

}
