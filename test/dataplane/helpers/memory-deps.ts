// An in-memory DataPlaneDeps: a store of sessions and limits, an event log with waiters.
import { randomUUID } from 'node:crypto';
import type { DataPlaneConfig, DataPlaneDeps } from '../../../server/dataplane/api.ts';
import type { EventInput, LimitScope, LimitValues, RuntimePatch, SessionRow, ZoneInfo } from '../../../server/domain.ts';

export interface RecordedEvent extends EventInput {
  id: number;
  at: number;
}

export const ZONES: ZoneInfo[] = [
  { code: 'de-fra', name: 'Frankfurt', country: 'DE', cities: ['frankfurt'], nodes: ['local'], has_active_nodes: true },
  { code: 'us-nyc', name: 'New York', country: 'US', cities: ['new york', 'newark'], nodes: ['local'], has_active_nodes: true },
  { code: 'jp-tyo', name: 'Tokyo', country: 'JP', cities: ['tokyo'], nodes: [], has_active_nodes: false },
];

export class MemoryDeps {
  sessions = new Map<string, SessionRow>();
  limits = new Map<string, LimitValues>();
  events: RecordedEvent[] = [];
  saves: { id: string; patch: RuntimePatch; at: number }[] = [];
  logs: { level: string; obj: unknown; msg?: string }[] = [];
  /** While true every store call throws, as SQLite does when the disk is gone or the db is locked. */
  storeFails = false;
  private waiters: { pred: (e: RecordedEvent) => boolean; resolve: (e: RecordedEvent) => void }[] = [];
  deps: DataPlaneDeps;

  constructor(config: Partial<DataPlaneConfig> = {}) {
    const log = (level: string) => (obj: object | string, msg?: string) => {
      this.logs.push({ level, obj, msg });
    };
    const failIfDown = () => {
      if (this.storeFails) throw new Error('SQLITE_IOERR: disk I/O error (test switch)');
    };
    this.deps = {
      store: {
        getSession: (id) => {
          failIfDown();
          const s = this.sessions.get(id);
          return s ? { ...s } : undefined;
        },
        saveRuntime: (id, patch) => {
          failIfDown();
          const s = this.sessions.get(id);
          if (!s) return;
          Object.assign(s, patch);
          this.saves.push({ id, patch: { ...patch }, at: performance.now() });
        },
        getLimits: (customerId, scope) => {
          failIfDown();
          const l = this.limits.get(`${customerId}|${scope}`);
          return l ? { ...l } : undefined;
        },
        sumCounters: (customerId, clientId) => {
          failIfDown();
          let up = 0, down = 0;
          for (const s of this.sessions.values()) {
            if (s.customer_id !== customerId || (clientId !== undefined && s.client_id !== clientId)) continue;
            up += s.uploaded_bytes;
            down += s.downloaded_bytes;
          }
          return { uploaded_bytes: up, downloaded_bytes: down };
        },
      },
      events: {
        publish: (e) => {
          const rec = { ...e, id: this.events.length + 1, at: performance.now() };
          this.events.push(rec);
          for (const w of [...this.waiters]) {
            if (w.pred(rec)) {
              this.waiters.splice(this.waiters.indexOf(w), 1);
              w.resolve(rec);
            }
          }
        },
      },
      zones: { list: () => ZONES },
      log: { info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug') },
      config: {
        host: '127.0.0.1',
        vlessTcpPort: 0,
        proxyPort: 0,
        wsPath: '/vless',
        statsIntervalMs: 200,
        heartbeatIntervalMs: 300,
        // The tests relay to loopback targets: an explicit opt-in (the default refuses loopback).
        egress: 'allow-all',
        headerTimeoutMs: 1000,
        connectTimeoutMs: 2000,
        // Short, so the tests see session_end soon after a close; the product default is 2000.
        reconnectGraceMs: 500,
        ...config,
      },
    };
  }

  createSession(o: { customer?: string; client?: string; reusable?: boolean; zone?: string; expiresAt?: string } = {}): string {
    const id = randomUUID();
    this.sessions.set(id, {
      id,
      customer_id: o.customer ?? 'cust-1',
      client_id: o.client ?? 'client-1',
      zone: o.zone ?? 'de-fra',
      reusable: o.reusable ?? false,
      paused: false,
      status: 'created',
      uploaded_bytes: 0,
      downloaded_bytes: 0,
      duration: 0,
      connections: 0,
      created_at: new Date().toISOString(),
      expires_at: o.expiresAt ?? null,
    });
    return id;
  }

  setLimits(customer: string, scope: LimitScope, values: LimitValues | undefined): void {
    if (values === undefined) this.limits.delete(`${customer}|${scope}`);
    else this.limits.set(`${customer}|${scope}`, values);
  }

  eventsOf(sessionId: string): RecordedEvent[] {
    return this.events.filter((e) => e.sessionId === sessionId);
  }

  waitForEvent(pred: (e: RecordedEvent) => boolean, timeoutMs = 5000): Promise<RecordedEvent> {
    const found = this.events.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (e: RecordedEvent) => { clearTimeout(t); resolve(e); } };
      const t = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`timed out waiting for event after ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** No log line may carry a full session id. */
  assertNoFullIdsLogged(): void {
    const text = JSON.stringify(this.logs);
    for (const id of this.sessions.keys()) if (text.includes(id)) throw new Error(`full session id ${id.slice(0, 8)}… was logged`);
  }
}
