// Builds the webhook service of a server on its database (SQLite or PostgreSQL), unless the
// options turn webhooks off (`webhooks: false`, e.g. for the relay benchmark's "off" run).
import type { EgressPolicy } from '../dataplane/egress.ts';
import type { ServerOptions } from '../http/config.ts';
import type { Services } from '../services.ts';
import type { PgStore } from '../store/pg/store.ts';
import type { WebhookStore } from '../store/webhooks.ts';
import { SqliteWebhookStore } from '../store/webhooks.ts';
import { loadWebhookKey, WEBHOOK_KEY_BYTES } from './secret.ts';
import { WebhookService } from './service.ts';

export async function createWebhooks(opts: ServerOptions, services: Services): Promise<WebhookService | null> {
  if (opts.webhooks === false) return null;
  const o = opts.webhooks ?? {};
  let store: WebhookStore;
  let key: Buffer;
  if (services.database === 'sqlite') {
    store = new SqliteWebhookStore(services.store.db);
    key = o.key ?? loadWebhookKey(opts.dataDir);
  } else {
    // Every instance must decrypt every endpoint's secret: the key is the cluster's, in the database.
    const { PgWebhookStore } = await import('../store/pg/webhooks.ts');
    const { clusterKey } = await import('../store/pg/cluster-keys.ts');
    const pool = (services.data as unknown as PgStore).pool;
    store = new PgWebhookStore(pool);
    key = o.key ?? (await clusterKey(pool, 'webhooks', WEBHOOK_KEY_BYTES));
  }
  const egress: EgressPolicy = o.egress ?? opts.egress ?? 'public-only';
  const hooks = new WebhookService(store, key, services.log, { ...o, egress }, services.audit);
  services.webhooks = hooks;
  return hooks;
}
