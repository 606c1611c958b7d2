// The local data plane's synchronous store on the PostgreSQL control plane. The relay admits
// and counts synchronously (DataPlaneDeps.store), so it reads a cache kept here:
//
//  - sessions: a connection's session row is (re)loaded before it is admitted (prepare());
//    while the database is unreachable a session already known keeps being served from the
//    cache, with the last limits known;
//  - limits and counter sums: loaded with a customer's first session, reloaded when another
//    instance (or this one) changes them: the `vad_limits` notification, then limitsChanged();
//  - pause: the `vad_sessions` notification of any instance's pause makes this one re-read the
//    row and cut the session's open connections here at once (pushed, not polled);
//  - counters and events: the runtime reports absolute totals; the view turns them into what was
//    moved since its last report and records that, and the data plane's events, in this
//    instance's counter journal (cluster/journal.ts, in the data folder) before anything can
//    lose them. Reports sealed from the journal are applied in order, each exactly once
//    (PgStore.applyJournalReport): bytes are ADDED, never written over, so several data planes
//    carrying one session cannot lose each other's bytes; the database away, they wait in the journal.
import type { DataPlane, DataPlaneDeps } from '../dataplane/api.ts';
import { eventInsert, type EventInput, type LimitScope, type LimitValues, type Logger, type RuntimePatch, type SessionRow } from '../domain.ts';
import type { PgListener } from '../store/pg/listener.ts';
import { CHANNELS, type PgStore } from '../store/pg/store.ts';
import { CounterBaselines } from './counter-baselines.ts';
import type { CounterJournal, Report } from './journal.ts';
import { baseKeyOf, periodOf } from '../contract/period.ts';
import { mergeClientLimits } from '../contract/client-limits.ts';
import { ClientControls } from './client-controls.ts';
import { isoNow, wallClock } from '../time.ts';

type Counters = { up: number; down: number };
const SCOPES: LimitScope[] = ['global', 'client', 'session'];
/** How often pending counter additions are written (and retried after a failure). */
const FLUSH_MS = 250;
/** Reports applied per flush at most (a backlog after an outage drains over a few flushes). */
const REPORTS_PER_FLUSH = 20;
/** Sessions kept in the cache beyond those with open connections. */
const MAX_CACHED = 20_000;
/** How often the bases of relaying sessions are read again. */
const BASES_MS = 2_000;

const baseKey = (customerId: string, scope: LimitScope, entityId: string, periodKey: number) => `${customerId}\u0000${scope}\u0000${entityId}\u0000${periodKey}`;

export class LocalView implements Pick<DataPlaneDeps['store'], 'getSession' | 'saveRuntime' | 'getLimits' | 'sumCounters' | 'prepare' | 'quotaBase' | 'getClientControl'> {
  /** Periodic caps' bases (server/quota/job.ts) of the entities of sessions loaded here. */
  private readonly bases = new Map<string, { up: number; down: number }>();
  private readonly basesTimer: NodeJS.Timeout;
  private readonly store: PgStore;
  private readonly log: Logger;
  private dataPlane: DataPlane | null = null;
  private readonly sessions = new Map<string, SessionRow>();
  private readonly limits = new Map<string, Partial<Record<LimitScope, LimitValues | undefined>>>();
  private readonly sums = new Map<string, Counters>();
  private readonly clients: ClientControls;
  /** The last absolute totals the runtime reported (or started from) per session. */
  private readonly baselines = new CounterBaselines();
  /** What the data plane counted and published, until the database has applied it. */
  private readonly journal: CounterJournal;
  private flushing: Promise<void> | null = null;
  private flushSoon = false;
  /** Sessions the previous process's data plane had connections of (repaired once its reports are applied). */
  private carried: string[];
  private readonly timer: NodeJS.Timeout;
  private readonly unlisten: (() => void)[] = [];
  /** Told the sessions whose bytes a report just wrote (usage thresholds). */
  onApplied: ((sessionIds: string[]) => void) | undefined;

  constructor(store: PgStore, listener: PgListener | null, log: Logger, journal: CounterJournal) {
    this.store = store;
    this.log = log;
    this.journal = journal;
    this.carried = journal.carriedBefore;
    this.clients = new ClientControls((customerId, clientId) => store.getClientControl(customerId, clientId));
    if (listener) {
      this.unlisten.push(
        listener.onNotification((channel, payload) => {
          if (channel === CHANNELS.sessions) void this.sessionChanged(payload);
          else if (channel === CHANNELS.limits) void this.limitsChanged(payload.slice(0, payload.lastIndexOf(':')));
        }),
        // Notifications were missed while the LISTEN connection was down: re-read what is cached.
        listener.onReconnect(() => {
          for (const id of this.sessions.keys()) void this.sessionChanged(id);
          for (const customerId of this.limits.keys()) void this.limitsChanged(customerId);
        }),
      );
    }
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
    // Bases of the sessions relaying here, read again: a period that turned, a rolling window.
    this.basesTimer = setInterval(() => {
      for (const [id, row] of this.sessions) if (this.live(id)) void this.loadBases(row).catch(() => {});
    }, BASES_MS);
    this.basesTimer.unref();
  }

  /** The data plane this view feeds (built after the view). */
  attach(dataPlane: DataPlane | null): void {
    this.dataPlane = dataPlane;
  }

  private live = (id: string): boolean => this.dataPlane?.live(id) !== undefined;

  // What the data plane calls (synchronously)

  prepare(sessionId: string): Promise<void> {
    return this.load(sessionId).catch((err: unknown) => {
      // Unreachable database: a session known from before is served from the cache.
      this.log.warn({ session: sessionId.slice(0, 8), err: String(err) }, 'loading a session for admission failed');
    });
  }

  getSession(id: string): SessionRow | undefined {
    const row = this.sessions.get(id);
    if (!row) return undefined;
    if (this.live(id)) return row;
    // The runtime starts this session's totals from the row: what is still unapplied counts too.
    const start = this.baselines.start(id, { up: row.uploaded_bytes, down: row.downloaded_bytes }, this.journal.unapplied(id));
    return { ...row, uploaded_bytes: start.up, downloaded_bytes: start.down };
  }

  saveRuntime(id: string, patch: RuntimePatch): void {
    const moved = this.baselines.advance(id, patch);
    this.journal.record(id, { up: moved.up, down: moved.down, status: patch.status, duration: patch.duration, connections: patch.connections });
    const row = this.sessions.get(id);
    if (row && patch.status !== undefined) row.status = patch.status;
  }

  /** A session event of the data plane: journalled with its time, stored with the next report (soon). */
  publish(e: EventInput): void {
    this.journal.event({ ...e, at: isoNow() });
    if (this.flushSoon) return;
    this.flushSoon = true;
    setImmediate(() => {
      this.flushSoon = false;
      void this.flush();
    });
  }

  getLimits(customerId: string, scope: LimitScope): LimitValues | undefined {
    return this.limits.get(customerId)?.[scope];
  }
  getClientControl = (customerId: string, clientId: string) => this.clients.get(customerId, clientId);

  quotaBase(customerId: string, scope: LimitScope, entityId: string, periodStart: number): { up: number; down: number } | undefined {
    return this.bases.get(baseKey(customerId, scope, entityId, periodStart));
  }

  /** The recorded bases of the row's customer, client and session for their current periods. */
  private async loadBases(row: SessionRow): Promise<void> {
    const limits = this.limits.get(row.customer_id);
    if (!limits) return;
    const now = wallClock();
    if (this.bases.size > 100_000) this.bases.clear();
    await Promise.all(
      SCOPES.map(async (scope) => {
        const period = periodOf(scope === 'client' ? mergeClientLimits(limits.client, this.clients.get(row.customer_id, row.client_id)) : limits[scope], now);
        if (!period) return;
        const key = baseKeyOf(period);
        const entity = scope === 'global' ? row.customer_id : scope === 'client' ? row.client_id : row.id;
        const base = await this.store.quotaBase(row.customer_id, scope, entity, key);
        if (base) this.bases.set(baseKey(row.customer_id, scope, entity, key), base);
      }),
    );
  }

  sumCounters(customerId: string, clientId?: string): { uploaded_bytes: number; downloaded_bytes: number } {
    const s = this.sums.get(clientId === undefined ? customerId : `${customerId}\u0000${clientId}`);
    return { uploaded_bytes: s?.up ?? 0, downloaded_bytes: s?.down ?? 0 };
  }

  // Loading and notifications

  private async load(id: string): Promise<void> {
    const row = await this.store.getSession(id);
    if (!row) {
      if (!this.live(id)) this.sessions.delete(id);
      return;
    }
    if (this.sessions.size >= MAX_CACHED) this.evict();
    this.sessions.set(id, row);
    const clientKey = `${row.customer_id}\u0000${row.client_id}`;
    const loads: Promise<unknown>[] = [this.clients.load(row.customer_id, row.client_id)];
    if (!this.limits.has(row.customer_id)) loads.push(this.readLimits(row.customer_id));
    if (!this.live(id)) {
      // The runtime reads the sums only when it first meets a customer or client: fresh then.
      loads.push(
        this.store.sumCounters(row.customer_id).then((s) => this.sums.set(row.customer_id, { up: s.uploaded_bytes, down: s.downloaded_bytes })),
        this.store.sumCounters(row.customer_id, row.client_id).then((s) => this.sums.set(clientKey, { up: s.uploaded_bytes, down: s.downloaded_bytes })),
      );
    }
    await Promise.all(loads);
    await this.loadBases(row);
  }

  private evict(): void {
    for (const id of this.sessions.keys()) {
      if (!this.live(id) && !this.journal.unapplied(id)) {
        this.sessions.delete(id);
        this.baselines.forget(id);
      }
    }
  }

  private async readLimits(customerId: string): Promise<void> {
    const values = await this.store.getAllLimits(customerId);
    this.limits.set(customerId, Object.fromEntries(SCOPES.map((scope) => [scope, values[scope]])));
  }

  /** A session's pause flag changed somewhere: re-read it; cut its connections here if paused. */
  private async sessionChanged(id: string): Promise<void> {
    if (!this.sessions.has(id) && !this.live(id)) return;
    try {
      const row = await this.store.getSession(id);
      if (!row) return;
      const cached = this.sessions.get(id);
      this.sessions.set(id, cached ? { ...cached, paused: row.paused } : row);
      if (row.paused && this.live(id)) this.dataPlane?.pause(id);
    } catch (err) {
      this.log.warn({ session: id.slice(0, 8), err: String(err) }, 'reading a changed session failed');
    }
  }

  /** A customer's limits changed somewhere: re-read them and apply them to open connections here. */
  private async limitsChanged(customerId: string): Promise<void> {
    if (!this.limits.has(customerId)) return;
    try {
      await Promise.all([this.readLimits(customerId), this.clients.reload(customerId)]);
      this.dataPlane?.limitsChanged(customerId);
    } catch (err) {
      this.log.warn({ err: String(err) }, 'reading changed limits failed');
    }
  }

  /**
   * Applies the journal's reports in order: the oldest unacknowledged one first (it may have
   * been applied before a crash: the store then skips it), else a new one sealed from pending.
   * A failure stops here: the same report is tried again at the next flush, and nothing new is
   * sealed meanwhile, so what comes during an outage stays pending (merged per session).
   */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (!this.journal.reports.length && !this.journal.hasPending && !this.carried.length) return Promise.resolve();
    this.flushing = (async () => {
      for (let i = 0; i < REPORTS_PER_FLUSH; i++) {
        const report = this.journal.reports[0] ?? this.journal.seal();
        if (!report) break;
        try {
          await this.apply(report);
        } catch (err) {
          this.log.warn({ err: String(err) }, 'writing session counters failed; kept in the journal for the next try');
          break;
        }
        this.journal.ack(report.seq);
      }
      if (this.carried.length && !this.journal.reports.length) await this.repairCarried();
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /**
   * The previous process died with connections of these sessions open: none is open now (unless
   * a client came back already), so they end as the data plane would have ended them.
   */
  private async repairCarried(): Promise<void> {
    const ids = this.carried.filter((id) => !this.live(id));
    try {
      const repaired = await this.store.repairCarriedSessions(ids);
      this.journal.forgetCarried(ids);
      this.carried = [];
      if (repaired.length) this.log.info({ sessions: repaired.length / 2 }, 'sessions left active by the previous process were closed');
    } catch (err) {
      this.log.warn({ err: String(err) }, 'closing the sessions left active by the previous process failed; retrying');
    }
  }

  private async apply(report: Report): Promise<void> {
    const adds = Object.entries(report.counters).map(([id, d]) => ({
      id,
      uploaded_bytes: d.up,
      downloaded_bytes: d.down,
      ...(d.status !== undefined ? { status: d.status } : {}),
      ...(d.duration !== undefined ? { duration: d.duration } : {}),
      ...(d.connections !== undefined ? { connections: d.connections } : {}),
    }));
    const events = report.events.map(({ at, ...e }) => eventInsert(e, at ?? isoNow()));
    if ((await this.store.applyJournalReport(this.journal.id, report.seq, adds, events)) !== false) this.onApplied?.(adds.filter((a) => a.uploaded_bytes > 0 || a.downloaded_bytes > 0).map((a) => a.id));
  }

  /** Stops listening and writes what is pending; what cannot be written stays in the journal for the next start. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.basesTimer);
    for (const off of this.unlisten) off();
    // A flush already running sealed its report before the data plane's last saves: flush again.
    for (let i = 0; i < 3 && (this.journal.reports.length || this.journal.hasPending || this.flushing); i++) await this.flush();
    const left = this.journal.reports.length + (this.journal.hasPending ? 1 : 0);
    if (left) this.log.warn({ reports: left }, 'session counters could not be written at shutdown; the journal keeps them for the next start');
    this.journal.close();
  }
}
