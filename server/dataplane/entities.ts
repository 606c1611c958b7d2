// The customers and clients the runtime holds in memory: their totals (read from the store when
// first seen), their limits (re-read at most every second), where their periodic caps count
// from, and a cluster node's share of their limits. Sessions are the runtime's (runtime.ts).
import type { DataPlaneDeps } from './api.ts';
import { baseKeyOf, isPeriodic, periodOf } from '../contract/period.ts';
import { mergeClientLimits, withUsageReset } from '../contract/client-limits.ts';
import type { LimitScope } from '../domain.ts';
import { wallClock } from '../time.ts';
import {
  type Buckets,
  type CapCounting,
  type ClientState,
  type ClusterShare,
  type Counters,
  type CustomerState,
  type SessionState,
  NO_SHARE,
  makeBuckets,
  nowMs,
  setRates,
} from './meters.ts';

/** A cluster node's share of a customer's or a client's limits, as the control plane sends it. */
export interface Share {
  left: Counters;
  final: { up: boolean; down: boolean };
  rateShare: number;
}

/** What a periodic cap has counted for an entity: its totals since its period's base. */
export const sinceBase = (e: CapCounting & { totals: Counters }): Counters => ({ up: e.totals.up - e.capBase.up, down: e.totals.down - e.capBase.down });

export class Entities {
  private readonly deps: DataPlaneDeps;
  readonly customers = new Map<string, CustomerState>();
  /** Cluster nodes: the last share told of each customer (key its id) and client (`customer\0client`). */
  private readonly shares = new Map<string, Share>();

  constructor(deps: DataPlaneDeps) {
    this.deps = deps;
  }

  customer(id: string): CustomerState {
    let customer = this.customers.get(id);
    if (!customer) {
      const sum = this.deps.store.sumCounters(id);
      customer = {
        id,
        totals: { up: sum.uploaded_bytes, down: sum.downloaded_bytes },
        buckets: makeBuckets(undefined, nowMs()),
        limits: {},
        clients: new Map(),
        sessions: new Set(),
        limitsReadAt: 0,
        capBase: { up: 0, down: 0 },
        capPeriod: -1,
        ...NO_SHARE(),
      };
      this.applyShare(customer, this.shares.get(id), new Set());
      this.customers.set(id, customer);
      this.readLimits(customer);
    }
    return customer;
  }

  client(customer: CustomerState, id: string): ClientState {
    let client = customer.clients.get(id);
    if (!client) {
      const sum = this.deps.store.sumCounters(customer.id, id);
      const totals = { up: sum.uploaded_bytes, down: sum.downloaded_bytes };
      client = { id, customer, totals, buckets: makeBuckets(undefined, nowMs()), active: new Set(), capBase: { up: 0, down: 0 }, capPeriod: -1, limits: undefined, control: undefined, ...NO_SHARE() };
      this.applyShare(client, this.shares.get(`${customer.id}\u0000${id}`), new Set());
      this.readClient(customer, client);
      setRates(client.buckets, client.limits, nowMs(), client.rateShare);
      customer.clients.set(id, client);
      this.countFrom(customer, 'client', client, wallClock());
    }
    return client;
  }

  readLimits(customer: CustomerState): void {
    const store = this.deps.store;
    customer.limits = {
      global: store.getLimits(customer.id, 'global') ?? undefined,
      client: store.getLimits(customer.id, 'client') ?? undefined,
      session: store.getLimits(customer.id, 'session') ?? undefined,
    };
    customer.limitsReadAt = nowMs();
    for (const client of customer.clients.values()) this.readClient(customer, client);
    const wall = wallClock();
    this.countFrom(customer, 'global', customer, wall);
    for (const client of customer.clients.values()) this.countFrom(customer, 'client', client, wall);
    for (const session of customer.sessions) this.countFrom(customer, 'session', session, wall);
    const now = nowMs();
    setRates(customer.buckets, customer.limits.global, now, customer.rateShare);
    for (const client of customer.clients.values()) setRates(client.buckets, client.limits, now, client.rateShare);
    for (const session of customer.sessions) setRates(session.buckets, customer.limits.session, now);
  }

  /**
   * Where an entity's caps count from (periodic caps): lifetime caps from zero; a
   * periodic cap from the entity's totals at the start of the current period, as the control
   * plane recorded them, or else, when the runtime first sees the entity in this period (or sees
   * the period turn while it is in memory), from its totals now. A rolling window's base moves
   * with the usage history, so it is read again each time.
   */
  countFrom(customer: CustomerState, scope: LimitScope, entity: CapCounting & { id: string; totals: Counters }, wall: number): void {
    const client = scope === 'client' ? (entity as ClientState) : undefined;
    const limits = client ? client.limits : customer.limits[scope];
    const period = periodOf(limits, wall);
    // A client's usage reset moves its base up (clients extension).
    const reset = client?.control?.reset ?? null;
    if (!period || !isPeriodic(limits)) {
      entity.capPeriod = -1;
      entity.capBase = withUsageReset({ up: 0, down: 0 }, null, reset);
      return;
    }
    if (entity.capPeriod === period.start && period.kind !== 'rolling_30d' && !reset) return;
    const entityId = scope === 'global' ? customer.id : entity.id;
    const recorded = this.deps.store.quotaBase?.(customer.id, scope, entityId, baseKeyOf(period));
    const sameStart = entity.capPeriod === period.start && period.kind !== 'rolling_30d';
    const base = recorded ? { up: Math.min(recorded.up, entity.totals.up), down: Math.min(recorded.down, entity.totals.down) } : sameStart ? entity.capBase : { ...entity.totals };
    entity.capBase = withUsageReset(base, period, reset);
    entity.capPeriod = period.start;
  }

  /** A client's record (clients extension) and the client limits in force for it. */
  private readClient(customer: CustomerState, client: ClientState): void {
    client.control = this.deps.store.getClientControl?.(customer.id, client.id);
    client.limits = mergeClientLimits(customer.limits.client, client.control);
  }

  /**
   * Records a share and applies it to the customer (clientId null) or client when in memory;
   * returns that customer when one is, so the caller can cut what the share no longer allows.
   */
  setShare(customerId: string, clientId: string | null, share: Share | null): { customer: CustomerState; entity: ClusterShare } | undefined {
    const key = clientId === null ? customerId : `${customerId}\u0000${clientId}`;
    if (share) this.shares.set(key, share);
    else this.shares.delete(key);
    const customer = this.customers.get(customerId);
    if (!customer) return undefined;
    const entity = clientId === null ? customer : customer.clients.get(clientId);
    if (!entity) return undefined;
    const sessions = new Set([...customer.sessions].filter((x) => clientId === null || x.client === entity));
    const rateBefore = entity.rateShare;
    this.applyShare(entity, share ?? undefined, sessions);
    if (entity.rateShare !== rateBefore) {
      const limits = clientId === null ? customer.limits.global : (entity as ClientState).limits;
      setRates(entity.buckets, limits, nowMs(), entity.rateShare);
    }
    return { customer, entity };
  }

  /** Sets an entity's grant from a share, less what its sessions counted and did not save yet. */
  private applyShare(entity: ClusterShare, share: Share | undefined, sessions: Set<SessionState>): void {
    if (!share) {
      Object.assign(entity, NO_SHARE());
      return;
    }
    let up = 0, down = 0;
    for (const x of sessions) {
      up += x.totals.up - x.lastSaved.up;
      down += x.totals.down - x.lastSaved.down;
    }
    entity.allow = { up: share.left.up - up, down: share.left.down - down };
    entity.allowFinal = { ...share.final };
    entity.rateShare = share.rateShare;
  }

  /**
   * A cluster node: the share kept for an entity dropped from memory takes what its grant has
   * left now (counted down by every byte since the share came; all its sessions are saved), so
   * state made again before the next share does not spend the same grant twice.
   */
  private keepLeft(key: string, entity: ClusterShare): void {
    const share = this.shares.get(key);
    if (share) this.shares.set(key, { ...share, left: { up: Math.min(share.left.up, entity.allow.up), down: Math.min(share.left.down, entity.allow.down) } });
  }

  /**
   * Lets go of the state of clients and customers that have no session in memory and whose token
   * buckets owe nothing (a bucket in debt is still shaping: dropping it would hand its client a
   * fresh burst). State made again later reads its totals from the store, where every forgotten
   * session's counters already are (the runtime keeps a session until it is saved).
   */
  dropUnused(now: number): void {
    const idle = (b: Buckets) => b.up.debtMs(now) === 0 && b.down.debtMs(now) === 0;
    for (const customer of [...this.customers.values()]) {
      const used = new Set<ClientState>();
      for (const session of customer.sessions) used.add(session.client);
      for (const client of [...customer.clients.values()]) {
        if (used.has(client) || client.active.size > 0 || !idle(client.buckets)) continue;
        this.keepLeft(`${customer.id}\u0000${client.id}`, client);
        customer.clients.delete(client.id);
      }
      if (customer.sessions.size > 0 || customer.clients.size > 0 || !idle(customer.buckets)) continue;
      this.keepLeft(customer.id, customer);
      this.customers.delete(customer.id);
    }
  }
}
