// Usage thresholds: the usage_threshold webhook at 50, 80 and 100 % of every byte cap in force
// (the session limits for each session, the client limits in force for each client: its
// override, else the template, and the global limits for the customer), download and upload
// apart, once per threshold and period.
//
// Where counters are applied, the session is touched (touch(): one Set add, nothing else): the
// local data plane's saves on SQLite, its journal's reports once written on PostgreSQL, and the
// nodes' reports once applied. Every `everyMs` a pass reads the touched sessions, and only for
// those under a cap in force the totals the cap counts (the session's row, the client's or the
// customer's sum) and the period's base, then records each threshold reached and not yet
// recorded (store/repos/thresholds.ts). The record is an INSERT only one caller wins, made with
// the webhook in one transaction: several instances, nodes and restarts send it once.
//
// A crossing's key (its period key): a fixed period's start, `rolling` for the 30-day window,
// `lifetime` for lifetime caps; with the cap's value and, for a client, its last usage reset
// counted in the period: raising or lowering a cap, or resetting a client's usage, lets the
// thresholds be reached (and sent) again. A cap of 0 has no thresholds (cap_reached tells it).
import { clientLimitsInForce, withUsageReset } from '../contract/client-limits.ts';
import { baseKeyOf, isPeriodic, periodOf, type Period } from '../contract/period.ts';
import type { ClientControl, LimitValues, Logger, SessionRow } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import { THRESHOLDS, type QueuedWith, type ThresholdCrossing } from '../store/repos/thresholds.ts';
import { wallClock } from '../time.ts';

type Scope = ThresholdCrossing['scope'];
type Counters = { up: number; down: number };

export type ThresholdStore = Pick<ControlStore, 'getSession' | 'getLimits' | 'getClientControl' | 'sumCounters' | 'quotaBase' | 'recordThreshold' | 'pruneThresholds'>;

/** The webhooks' side: the outbox entry queued with a crossing won, and the sender woken after. */
export interface ThresholdWebhooks {
  outboxEntry(customerId: string, kind: 'usage_threshold', data: Record<string, unknown>, sessionId?: string): QueuedWith;
  wake(): void;
}

export interface ThresholdWatchDeps {
  data: ThresholdStore;
  webhooks: ThresholdWebhooks | null;
  log: Logger;
  /** How often touched sessions are checked (ms). Default 1000. */
  everyMs?: number;
}

/** One cap in force for one entity: what it counts and against which limits. */
interface Check {
  scope: Scope;
  entityId: string;
  limits: LimitValues;
  totals: Counters;
  reset: ClientControl['reset'];
  row: SessionRow;
}

const hasByteCap = (l: LimitValues | undefined): l is LimitValues => !!l && (l.downloaded_bytes !== undefined || l.uploaded_bytes !== undefined);
const iso = (ms: number) => new Date(ms).toISOString();
const KNOWN_MAX = 100_000;
const PRUNE_AFTER_MS = 120 * 86_400_000;

export class ThresholdWatch {
  private readonly deps: ThresholdWatchDeps;
  private touched = new Set<string>();
  /** Crossings this instance knows are recorded (no INSERT again), bounded. */
  private readonly known = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private lastPrune = 0;

  constructor(deps: ThresholdWatchDeps) {
    this.deps = deps;
  }

  /** A session's counters were just applied to the store. Cheap: checked by the next pass. */
  touch(sessionId: string): void {
    this.touched.add(sessionId);
  }

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), this.deps.everyMs ?? 1000);
    this.timer.unref();
  }

  /** Stops the timer, then checks what was touched last (the data plane's last saves). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    if (this.touched.size) await this.runOnce();
  }

  /** One pass over the sessions touched since the last one. */
  runOnce(): Promise<void> {
    return (this.running ??= this.pass().finally(() => (this.running = null)));
  }

  private async pass(): Promise<void> {
    const ids = [...this.touched];
    this.touched = new Set();
    const byCustomer = new Map<string, SessionRow[]>();
    for (const id of ids) {
      try {
        const row = await this.deps.data.getSession(id);
        if (!row) continue;
        const list = byCustomer.get(row.customer_id) ?? [];
        list.push(row);
        byCustomer.set(row.customer_id, list);
      } catch (err) {
        this.touched.add(id);
        this.deps.log.warn({ err: String(err) }, 'reading a session for its usage thresholds failed; retrying');
      }
    }
    for (const [customerId, rows] of byCustomer) {
      try {
        await this.checkCustomer(customerId, rows);
      } catch (err) {
        for (const r of rows) this.touched.add(r.id);
        this.deps.log.warn({ err: String(err) }, 'checking usage thresholds failed; retrying');
      }
    }
    await this.prune();
  }

  /** The caps in force over the touched sessions of one customer: each session's, client's, and the customer's. */
  private async checkCustomer(customerId: string, rows: SessionRow[]): Promise<void> {
    const { data } = this.deps;
    const [global, template, session] = await Promise.all([data.getLimits(customerId, 'global'), data.getLimits(customerId, 'client'), data.getLimits(customerId, 'session')]);
    const checks: Check[] = [];
    if (hasByteCap(session)) {
      for (const row of rows) checks.push({ scope: 'session', entityId: row.id, limits: session, totals: { up: row.uploaded_bytes, down: row.downloaded_bytes }, reset: null, row });
    }
    const clients = new Map(rows.map((r) => [r.client_id, r]));
    for (const [clientId, row] of clients) {
      const control = await data.getClientControl(customerId, clientId);
      const limits = clientLimitsInForce(template, control?.limits).limits;
      if (!hasByteCap(limits)) continue;
      const sum = await data.sumCounters(customerId, clientId);
      checks.push({ scope: 'client', entityId: clientId, limits, totals: { up: sum.uploaded_bytes, down: sum.downloaded_bytes }, reset: control?.reset ?? null, row });
    }
    if (hasByteCap(global)) {
      const sum = await data.sumCounters(customerId);
      checks.push({ scope: 'global', entityId: customerId, limits: global, totals: { up: sum.uploaded_bytes, down: sum.downloaded_bytes }, reset: null, row: rows[0]! });
    }
    for (const c of checks) await this.check(customerId, c);
  }

  /** Records (and sends) each threshold of one cap reached and not yet recorded. */
  private async check(customerId: string, c: Check): Promise<void> {
    const t = wallClock();
    const period = isPeriodic(c.limits) ? periodOf(c.limits, t) : null;
    let base: Counters = { up: 0, down: 0 };
    if (period) {
      const recorded = await this.deps.data.quotaBase(customerId, c.scope, c.entityId, baseKeyOf(period));
      // Not recorded yet (the quota job does within a second): checked again next pass.
      if (!recorded) return void this.touched.add(c.row.id);
      base = { up: Math.min(recorded.up, c.totals.up), down: Math.min(recorded.down, c.totals.down) };
    }
    const resetCounts = !!c.reset && (!period || c.reset.at >= period.start);
    base = withUsageReset(base, period, c.reset);
    const used = { up: Math.max(0, c.totals.up - base.up), down: Math.max(0, c.totals.down - base.down) };
    const periodName = !period ? 'lifetime' : period.kind === 'rolling_30d' ? 'rolling' : String(period.start);
    for (const [direction, cap, usedBytes] of [['download', c.limits.downloaded_bytes, used.down], ['upload', c.limits.uploaded_bytes, used.up]] as const) {
      if (cap === undefined || cap <= 0) continue;
      const periodKey = `${periodName}|cap:${cap}|reset:${resetCounts ? c.reset!.at : 0}`;
      for (const threshold of THRESHOLDS) {
        if (usedBytes * 100 < cap * threshold) break;
        const key = `${customerId}\u0000${c.scope}\u0000${c.entityId}\u0000${direction}\u0000${threshold}\u0000${periodKey}`;
        if (this.known.has(key)) continue;
        const crossing: ThresholdCrossing = {
          customer_id: customerId, scope: c.scope, entity_id: c.entityId, direction, threshold, period_key: periodKey,
          period_start: period && period.kind !== 'rolling_30d' ? period.start : 0, used_bytes: usedBytes, cap_bytes: cap, crossed_at: iso(t),
        };
        await this.record(crossing, c, period, resetCounts);
        if (this.known.size >= KNOWN_MAX) this.known.clear();
        this.known.add(key);
      }
    }
  }

  private async record(crossing: ThresholdCrossing, c: Check, period: Period | null, resetCounts: boolean): Promise<void> {
    const { webhooks, data } = this.deps;
    const start = period ? (resetCounts ? Math.max(period.start, c.reset!.at) : period.start) : null;
    const payload: Record<string, unknown> = {
      scope: c.scope,
      ...(c.scope === 'session' ? { session_id: c.row.id } : {}),
      ...(c.scope !== 'global' ? { client_id: c.row.client_id } : {}),
      direction: crossing.direction,
      threshold: crossing.threshold,
      used_bytes: crossing.used_bytes,
      cap_bytes: crossing.cap_bytes,
      ...(start !== null ? { period_start: iso(start) } : {}),
      ...(period?.end != null ? { period_end: iso(period.end) } : {}),
    };
    const queued = webhooks ? webhooks.outboxEntry(crossing.customer_id, 'usage_threshold', payload, c.scope === 'session' ? c.row.id : undefined) : null;
    if (await data.recordThreshold(crossing, queued)) webhooks?.wake();
  }

  private async prune(): Promise<void> {
    const t = wallClock();
    if (t - this.lastPrune < 3_600_000) return;
    this.lastPrune = t;
    await this.deps.data.pruneThresholds(t - PRUNE_AFTER_MS).catch((err: unknown) => this.deps.log.warn({ err: String(err) }, 'pruning usage thresholds failed'));
  }
}
