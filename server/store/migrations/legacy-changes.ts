// Versions 1 to 12's changes after the first tables (legacy.ts), written once with index.ts's fragments.

/** Per node (`node run`), the last report seq applied: a report resent after a lost ack counts once. */
export const REPORT_SEQ = `ALTER TABLE nodes ADD COLUMN report_seq {bigint} NOT NULL DEFAULT 0;`;

/**
 * Usage history (server/usage/history.ts): bytes per session and node per bucket; `start` in epoch ms
 * (UTC). Writes go to minute buckets; compaction rolls minutes older than a day into hours, hours older
 * than 90 days into days, and prunes days past retention. Customer, client and zone are copied from the
 * session so dashboards need no join.
 */
export const USAGE_BUCKETS = `
  CREATE TABLE usage_buckets (
    step TEXT NOT NULL CHECK (step IN ('minute', 'hour', 'day')),
    start {bigint} NOT NULL,
    session_id TEXT NOT NULL,
    node TEXT NOT NULL,
    customer_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    zone TEXT NOT NULL,
    uploaded_bytes {bigint} NOT NULL,
    downloaded_bytes {bigint} NOT NULL,
    UNIQUE (session_id, step, start, node)
  );
  CREATE INDEX usage_by_customer ON usage_buckets (customer_id, step, start);
  CREATE INDEX usage_by_client ON usage_buckets (customer_id, client_id, step, start);
  CREATE INDEX usage_by_age ON usage_buckets (step, start);`;

/** Every API or CLI change: who (token id and role, never the token), what, values before and after (JSON). */
export const AUDIT_LOG = `
  CREATE TABLE audit_log (
    id {serial},
    customer_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    actor_token_id TEXT,
    actor_role TEXT NOT NULL,
    action TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id TEXT NOT NULL,
    session_id TEXT,
    client_id TEXT,
    before_json TEXT,
    after_json TEXT
  );
  CREATE INDEX audit_by_customer ON audit_log (customer_id, id);
  CREATE INDEX audit_by_session ON audit_log (customer_id, session_id, id);
  CREATE INDEX audit_by_age ON audit_log (created_at);`;

/** Session expiry: when a session ends by itself (ISO time), or NULL. */
export const SESSION_EXPIRY = `
  ALTER TABLE sessions ADD COLUMN expires_at TEXT;
  CREATE INDEX sessions_by_expiry ON sessions (expires_at) WHERE expires_at IS NOT NULL;`;

/** Periodic caps (server/quota/*): an entity's lifetime totals when its period began (global: the customer). */
export const QUOTA_BASES = `
  CREATE TABLE quota_bases (
    customer_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    period_start {bigint} NOT NULL,
    up {bigint} NOT NULL,
    down {bigint} NOT NULL,
    PRIMARY KEY (customer_id, scope, entity_id, period_start)
  );
  CREATE INDEX quota_bases_by_age ON quota_bases (period_start);`;

/**
 * Webhooks: endpoints (secret AES-GCM encrypted: server/webhooks/secret.ts), the durable delivery outbox
 * (epoch ms; one lease per sender), and its event-log cursor (starts at the newest: nothing older is sent).
 */
export const WEBHOOKS = `
  CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    enabled {bool} NOT NULL DEFAULT {true},
    secret_enc TEXT NOT NULL,
    secret_prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX webhooks_by_customer ON webhooks (customer_id, created_at);
  CREATE TABLE webhook_deliveries (
    seq {serial},
    id TEXT NOT NULL UNIQUE,
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    order_key TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at {bigint} NOT NULL,
    lease_until {bigint},
    last_status_code INTEGER,
    last_error TEXT,
    created_at TEXT NOT NULL,
    delivered_at TEXT
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
  CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, order_key, status, seq);
  CREATE TABLE webhook_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), last_event_id {bigint} NOT NULL);
  INSERT INTO webhook_cursor (id, last_event_id) SELECT 1, COALESCE(MAX(id), 0) FROM events;`;

/**
 * Cluster limits and node TLS: cumulative, never reset byte grants per node and customer (or client, with
 * client_id; rules in server/store/grants.ts); each node's listener TLS and geo relay port, with self-signed
 * certificates' SHA-256 (links' pcs; server/cluster/geo.ts); when a node last claimed a session's first
 * connection (epoch ms: central max_sessions).
 */
export const CLUSTER_LIMITS = `
  CREATE TABLE node_grants (
    node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    used_up {bigint} NOT NULL DEFAULT 0,
    used_down {bigint} NOT NULL DEFAULT 0,
    granted_up {bigint} NOT NULL DEFAULT 0,
    granted_down {bigint} NOT NULL DEFAULT 0,
    gen INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (customer_id, client_id, node_id)
  );
  ALTER TABLE nodes ADD COLUMN tls {bool} NOT NULL DEFAULT {false};
  ALTER TABLE nodes ADD COLUMN tls_pcs TEXT;
  ALTER TABLE nodes ADD COLUMN relay_port INTEGER;
  ALTER TABLE nodes ADD COLUMN relay_pcs TEXT;
  ALTER TABLE sessions ADD COLUMN claimed_at {bigint};`;

/** PostgreSQL only (SQLite: version 13): each counter journal's last applied report, so resends apply once. */
export const JOURNAL_SEQS = `
  CREATE TABLE journal_seqs (
    journal_id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
  );`;

/** Webhook health (repos/webhooks.ts): failure streak and start, why/when auto-disabled, pending dropped over cap. */
export const WEBHOOK_HEALTH = `
  ALTER TABLE webhooks ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE webhooks ADD COLUMN failing_since TEXT;
  ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT;
  ALTER TABLE webhooks ADD COLUMN disabled_at TEXT;
  ALTER TABLE webhooks ADD COLUMN dropped {bigint} NOT NULL DEFAULT 0;
  CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, status, seq);`;

/**
 * Crash repair (server/cluster/crash-repair.ts): the node's random process id (sent in its channel's first
 * report; a new one means a restart) and whether that process's sessions were repaired when the node fell
 * silent; and the node a session moved from (its late reports still count).
 */
export const CRASH_REPAIR = `
  ALTER TABLE nodes ADD COLUMN boot_id TEXT;
  ALTER TABLE nodes ADD COLUMN boot_repaired {bool} NOT NULL DEFAULT {false};
  ALTER TABLE session_placements ADD COLUMN moved_from TEXT;
  CREATE INDEX placements_by_moved_from ON session_placements (moved_from);`;
