// Builds the webhook service of a server on its database (SQLite or PostgreSQL), unless the
// options turn webhooks off (`webhooks: false`, e.g. for the relay benchmark's "off" run).
import type { EgressPolicy } from '../dataplane/egress.ts';
import type { ServerOptions } from '../http/config.ts';
import type { Services } from '../services.ts';
import type { PgStore } from '../store/pg/store.ts';
import type { WebhookStore } from '../store/webhooks.ts';
import { SqliteWebhookStore } from '../store/webhooks.ts';
import { loadWebhookKey } from './secret.ts';
import { WebhookService } from './service.ts';

export async function createWebhooks(opts: ServerOptions, services: Services): Promise<WebhookService | null> {
  if (opts.webhooks === false) return null;
  const o = opts.webhooks ?? {};
  let store: WebhookStore;
  if (services.database === 'sqlite') {
    store = new SqliteWebhookStore(services.store.db);
  } else {
    const { PgWebhookStore } = await import('../store/pg/webhooks.ts');
    store = new PgWebhookStore((services.data as unknown as PgStore).pool);
  }
  const egress: EgressPolicy = o.egress ?? opts.egress ?? 'public-only';
  const hooks = new WebhookService(store, o.key ?? loadWebhookKey(opts.dataDir), services.log, { ...o, egress });
  services.webhooks = hooks;
  return hooks;
}
