// What differs between the two databases a server runs on, behind one interface: the embedded
// SQLite store (backend/sqlite.ts) or the cluster's shared PostgreSQL (backend/postgres.ts).
// services.ts composes everything else once, on top of either.
import type { SessionEvent } from '../contract/schemas.ts';
import type { DataPlane, DataPlaneDeps } from '../dataplane/api.ts';
import type { EventInput } from '../domain.ts';
import type { EventBus } from '../events/bus.ts';
import type { EventLogSource } from '../events/sse.ts';
import type { RevocationSource } from '../events/streams.ts';
import type { TokenLookup } from '../plugins/auth.ts';
import type { ControlStore } from '../store/control.ts';
import type { Store } from '../store/store.ts';
import type { SubscriptionData } from '../store/repos/subscriptions.ts';
import type { WebhookStore } from '../store/repos/webhooks.ts';

/** The embedded database's own handles (tests and tools reach SQLite through them). */
export interface SqliteHandles {
  /** The synchronous store. */
  store: Store;
  /** The in-process event bus. */
  bus: EventBus;
}

export interface Backend {
  database: 'sqlite' | 'postgres';
  /** The async store seam (timed by the instance's metrics). */
  data: ControlStore;
  /** The event log as the event stream reads it (replay, then live). */
  events: EventLogSource;
  /** Persists an event and wakes its readers. */
  publish(e: EventInput): Promise<SessionEvent>;
  /** Wakes the readers of events already stored. */
  announce(stored: Array<{ customerId: string; event: SessionEvent }>): void;
  tokenLookup: TokenLookup & { close?(): void };
  /** Where open streams see revoked tokens. */
  revocations: RevocationSource;
  /** SQLite's handles; null on PostgreSQL. */
  sqlite: SqliteHandles | null;
  /** What the local data plane reads and writes, and how its events are published. */
  dataPlaneStore: DataPlaneDeps['store'];
  publishLocal(e: EventInput): void;
  /**
   * Calls `fn` with the sessions whose bytes a report of the local data plane's journal just
   * wrote (PostgreSQL). Absent on SQLite, where each save of the data plane is written at once.
   */
  onCountersApplied?(fn: (sessionIds: string[]) => void): void;
  /** Hands the local data plane (once built) to what pushes changes to it. */
  attach(dataPlane: DataPlane | null): void;
  webhookStore(): WebhookStore;
  subscriptionData(): SubscriptionData;
  /** A key every instance shares, kept in the database; null where keys are files of the data folder. */
  clusterKey: ((name: 'webhooks' | 'subscriptions', bytes: number) => Promise<Buffer>) | null;
  /**
   * The cluster's instances (PostgreSQL): this one's id (its counter journal's) and the
   * notifications every instance hears, for support reads across instances. Absent on SQLite.
   */
  instances?: { instanceId: string; onNotification(fn: (channel: string, payload: string) => void): () => void };
  /** Flushes what the data plane left to write (after it closed, before the store closes). */
  drain(): Promise<void>;
  /** Releases the store (and on PostgreSQL the listener and the event feed). */
  close(): Promise<void>;
}
