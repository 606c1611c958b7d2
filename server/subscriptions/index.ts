// Builds the subscription service of a server on its database: on SQLite the rows beside the
// store and the key in a file of the data folder; on PostgreSQL the rows in the shared database
// and the cluster's key there too, so that every instance gives and serves the same URLs.
import type { SubscriptionData } from '../store/repos/subscriptions.ts';
import type { MissLimiterOptions } from './miss-limiter.ts';
import { KEY_BYTES, loadServerKey } from './secret.ts';
import { type SubscriptionDeps, SubscriptionService } from './service.ts';

export interface SubscriptionStorage {
  store: () => SubscriptionData;
  /** The cluster's shared keys (PostgreSQL); null: the key is a file of the data folder. */
  clusterKey: ((name: 'subscriptions', bytes: number) => Promise<Buffer>) | null;
  dataDir: string;
}

export function createSubscriptions(deps: SubscriptionDeps, storage: SubscriptionStorage, missLimit?: Partial<MissLimiterOptions>): SubscriptionService {
  const { clusterKey, dataDir } = storage;
  const loadKey = clusterKey ? () => clusterKey('subscriptions', KEY_BYTES) : async () => loadServerKey(dataDir);
  return new SubscriptionService(deps, storage.store(), loadKey, missLimit);
}
