// Builds the webhook service of a server on its database (SQLite or PostgreSQL), unless the
// options turn webhooks off (`webhooks: false`, e.g. for the relay benchmark's "off" run).
import type { AuditTrail } from '../audit/trail.ts';
import type { EgressPolicy } from '../dataplane/egress.ts';
import type { Logger } from '../domain.ts';
import type { WebhookStore } from '../store/repos/webhooks.ts';
import { loadWebhookKey, WEBHOOK_KEY_BYTES } from './secret.ts';
import { WebhookService, type WebhookOptions } from './service.ts';

export interface WebhookParts {
  store: () => WebhookStore;
  /** The cluster's shared keys (PostgreSQL: every instance must decrypt every endpoint's
   *  secret); null: the key is a file of the data folder. */
  clusterKey: ((name: 'webhooks', bytes: number) => Promise<Buffer>) | null;
  log: Logger;
  audit: Pick<AuditTrail, 'record'>;
}

/** The server options webhooks read (http/config.ts ServerOptions). */
export interface WebhookServerOptions {
  webhooks?: false | WebhookOptions;
  egress?: EgressPolicy;
  dataDir: string;
}

export async function createWebhooks(opts: WebhookServerOptions, parts: WebhookParts): Promise<WebhookService | null> {
  if (opts.webhooks === false) return null;
  const o = opts.webhooks ?? {};
  const store = parts.store();
  const key = o.key ?? (parts.clusterKey ? await parts.clusterKey('webhooks', WEBHOOK_KEY_BYTES) : loadWebhookKey(opts.dataDir));
  const egress: EgressPolicy = o.egress ?? opts.egress ?? 'public-only';
  return new WebhookService(store, key, parts.log, { ...o, egress }, parts.audit);
}
