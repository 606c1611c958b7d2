// The node's view of the cluster: the last state the control plane sent, as the data plane's
// synchronous store (DataPlaneDeps.store). What the data plane counts goes to the journal; a
// session's first connection here may ask the control plane first (claims.ts, through `claim`).
import type { DataPlane, DataPlaneDeps } from '../dataplane/api.ts';
import type { ClientControl, LimitScope, LimitValues, RuntimePatch, SessionRow } from '../domain.ts';
import { quotaBaseKey, type NodeState } from '../cluster/node-channel.ts';
import { CounterBaselines } from '../cluster/counter-baselines.ts';
import type { CounterJournal } from '../cluster/journal.ts';

/** Unknown sessions a node asks the control plane about, at most, per second. */
const UNKNOWN_PER_S = 50;

/** The node's synchronous store for the data plane: the last state the control plane sent. */
export class NodeView implements Pick<DataPlaneDeps['store'], 'getSession' | 'saveRuntime' | 'getLimits' | 'sumCounters' | 'quotaBase' | 'prepare' | 'clusterRefusal' | 'getClientControl'> {
  sessions = new Map<string, SessionRow>();
  limits: NodeState['limits'] = {};
  sums: NodeState['sums'] = {};
  bases: NonNullable<NodeState['bases']> = {};
  /** Clients (extension): the records of the clients of sessions here, by `customer\u0000client`. */
  clients: NonNullable<NodeState['clients']> = {};
  private readonly baselines = new CounterBaselines();
  dataPlane: DataPlane | null = null;
  /** Where what the data plane counts goes first: the node's journal. */
  readonly journal: CounterJournal;

  constructor(journal: CounterJournal) {
    this.journal = journal;
  }

  getSession(id: string): SessionRow | undefined {
    const row = this.sessions.get(id);
    if (!row) return undefined;
    if (this.dataPlane?.live(id)) return row;
    // The runtime starts this session's totals from here: what is not yet applied counts too.
    const start = this.baselines.start(id, { up: row.uploaded_bytes, down: row.downloaded_bytes }, this.journal.unapplied(id));
    return { ...row, uploaded_bytes: start.up, downloaded_bytes: start.down };
  }

  saveRuntime(id: string, patch: RuntimePatch): void {
    const moved = this.baselines.advance(id, patch);
    this.journal.record(id, { up: moved.up, down: moved.down, status: patch.status, duration: patch.duration, connections: patch.connections });
  }

  getLimits(customerId: string, scope: LimitScope): LimitValues | undefined {
    return this.limits[customerId]?.[scope] ?? undefined;
  }

  getClientControl(customerId: string, clientId: string): ClientControl | undefined {
    return this.clients[`${customerId}\u0000${clientId}`];
  }

  sumCounters(customerId: string, clientId?: string): { uploaded_bytes: number; downloaded_bytes: number } {
    const s = this.sums[clientId === undefined ? customerId : `${customerId}\u0000${clientId}`];
    return { uploaded_bytes: s?.up ?? 0, downloaded_bytes: s?.down ?? 0 };
  }

  quotaBase(customerId: string, scope: LimitScope, entityId: string, periodStart: number): { up: number; down: number } | undefined {
    return this.bases[quotaBaseKey(customerId, scope, entityId, periodStart)];
  }

  /**
   * Asks the control plane before a session's first connection here (set by runNode): its answer
   * carries the session's row and its customer's limits as stored now (read-your-writes: a
   * creation, resume or limits change answered by any instance holds for this connection) and
   * decides central max_sessions.
   */
  claim: ((sessionId: string, row: SessionRow | undefined) => Promise<void>) | null = null;
  /** Refusals the control plane decided (a claim refused), taken by the next admission. */
  refusals = new Map<string, 'max_sessions'>();
  /** Sessions unknown here asked about lately (each at most once a second, at most UNKNOWN_PER_S in all). */
  private readonly unknownAsked = new Map<string, number>();

  prepare(sessionId: string): Promise<void> | null {
    if (!this.claim) return null;
    const row = this.sessions.get(sessionId);
    const live = this.dataPlane?.live(sessionId);
    if (live && live.open_connections > 0) return null;
    if (!row && !this.mayAskUnknown(sessionId, Date.now())) return null;
    return this.claim(sessionId, row);
  }

  private mayAskUnknown(id: string, now: number): boolean {
    for (const [k, at] of this.unknownAsked) if (now - at >= 1000) this.unknownAsked.delete(k);
    if (this.unknownAsked.has(id) || this.unknownAsked.size >= UNKNOWN_PER_S) return false;
    this.unknownAsked.set(id, now);
    return true;
  }

  /** The control plane's answer to a claim: the session as stored (null: not placed here) and its customer's limits. */
  /**
   * When each session was last read from the control plane before its first connection: a state
   * built before that read may not name it yet (another instance made it a moment ago), so for
   * FRESH_GRACE_MS a state without it neither drops nor cuts it (state.ts).
   */
  readonly freshAt = new Map<string, number>();

  freshen(sessionId: string, row: SessionRow | null | undefined, limits: NodeState['limits'][string] | undefined, client?: ClientControl | null): void {
    if (row === undefined) return;
    if (row === null || row.id !== sessionId) {
      this.sessions.delete(sessionId);
      return;
    }
    this.sessions.set(row.id, row);
    this.freshAt.set(row.id, Date.now());
    const key = `${row.customer_id}\u0000${row.client_id}`;
    if (client !== undefined && JSON.stringify(this.clients[key] ?? null) !== JSON.stringify(client)) {
      const { [key]: _old, ...rest } = this.clients;
      this.clients = client ? { ...rest, [key]: client } : rest;
      this.dataPlane?.limitsChanged(row.customer_id);
    }
    if (limits && JSON.stringify(this.limits[row.customer_id]) !== JSON.stringify(limits)) {
      this.limits = { ...this.limits, [row.customer_id]: limits };
      this.dataPlane?.limitsChanged(row.customer_id);
    }
  }

  clusterRefusal(sessionId: string): 'max_sessions' | undefined {
    const r = this.refusals.get(sessionId);
    this.refusals.delete(sessionId);
    return r;
  }
}
