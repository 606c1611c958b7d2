// The PostgreSQL schema's first twelve versions, as released before one migration list served
// both databases (index.ts). Never edit an entry: databases in the field recorded them.
/** PostgreSQL versions 1 to 12, as released. */
export const PG_LEGACY: readonly string[] = [
  // 1: the SQLite tables, the event id counter, and the cluster's nodes and placements.
  `
  CREATE TABLE customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
  );
  CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    -- Insertion order, like SQLite's rowid: listings of tokens made in the same millisecond agree.
    seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    role TEXT NOT NULL CHECK (role IN ('owner', 'agent')),
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE TABLE sessions (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    client_id TEXT NOT NULL,
    zone TEXT NOT NULL,
    connection_type TEXT NOT NULL,
    reusable BOOLEAN NOT NULL,
    paused BOOLEAN NOT NULL DEFAULT false,
    status TEXT NOT NULL DEFAULT 'created',
    uploaded_bytes BIGINT NOT NULL DEFAULT 0,
    downloaded_bytes BIGINT NOT NULL DEFAULT 0,
    duration BIGINT NOT NULL DEFAULT 0,
    connections BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
  );
  CREATE INDEX sessions_by_customer ON sessions (customer_id, seq);
  CREATE INDEX sessions_by_client ON sessions (customer_id, client_id, seq);
  CREATE TABLE limits (
    customer_id TEXT NOT NULL REFERENCES customers(id),
    scope TEXT NOT NULL CHECK (scope IN ('global', 'client', 'session')),
    id TEXT NOT NULL,
    fields TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (customer_id, scope)
  );
  -- Event ids come from this one row, updated in the inserting statement: see store.ts.
  CREATE TABLE event_counter (
    one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    last_id BIGINT NOT NULL
  );
  INSERT INTO event_counter (one, last_id) VALUES (true, 0);
  CREATE TABLE events (
    id BIGINT PRIMARY KEY,
    customer_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    created_at TEXT NOT NULL,
    duration BIGINT NOT NULL,
    downloaded_bytes BIGINT NOT NULL,
    uploaded_bytes BIGINT NOT NULL
  );
  CREATE INDEX events_by_customer ON events (customer_id, id);
  CREATE INDEX events_by_time ON events (created_at);
  -- Bumped with every token change: the token caches of all instances watch it.
  CREATE TABLE token_version (
    one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    version BIGINT NOT NULL
  );
  INSERT INTO token_version (one, version) VALUES (true, 0);
  CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    zone TEXT NOT NULL,
    public_host TEXT NOT NULL,
    vless_ws_port INTEGER,
    vless_tcp_port INTEGER,
    proxy_port INTEGER,
    token_hash TEXT NOT NULL UNIQUE,
    token_prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_contact TIMESTAMPTZ
  );
  CREATE INDEX nodes_by_zone ON nodes (zone, last_contact);
  CREATE TABLE session_placements (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    placed_at TEXT NOT NULL
  );
  CREATE INDEX placements_by_node ON session_placements (node_id);
  `,
  // 2: the last report (by sequence number) applied per node (`node run`): see SQLite's 4.
  `ALTER TABLE nodes ADD COLUMN report_seq BIGINT NOT NULL DEFAULT 0;`,
  // 3 (usage history): traffic buckets per session and node; see SQLite's 5.
  `
  CREATE TABLE usage_buckets (
    step TEXT NOT NULL CHECK (step IN ('minute', 'hour', 'day')),
    start BIGINT NOT NULL,
    session_id TEXT NOT NULL,
    node TEXT NOT NULL,
    customer_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    zone TEXT NOT NULL,
    uploaded_bytes BIGINT NOT NULL,
    downloaded_bytes BIGINT NOT NULL,
    UNIQUE (session_id, step, start, node)
  );
  CREATE INDEX usage_by_customer ON usage_buckets (customer_id, step, start);
  CREATE INDEX usage_by_client ON usage_buckets (customer_id, client_id, step, start);
  CREATE INDEX usage_by_age ON usage_buckets (step, start);
  `,
  // 4 (audit trail): as SQLite's migration 6 (server/store/db.ts).
  `
  CREATE TABLE audit_log (
    id BIGSERIAL PRIMARY KEY,
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
  CREATE INDEX audit_by_age ON audit_log (created_at);
  `,
  // 5 (session expiry): as SQLite's migration 7.
  `
  ALTER TABLE sessions ADD COLUMN expires_at TEXT;
  CREATE INDEX sessions_by_expiry ON sessions (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // 6 (subscriptions in the cluster): as SQLite's migration 2, plus the cluster's key the URL
  // secrets are derived from (server/store/repos/subscriptions.ts, repos/cluster-keys.ts; on SQLite a file in the data folder).
  `
  CREATE TABLE subscriptions (
    customer_id TEXT NOT NULL REFERENCES customers(id),
    client_id TEXT NOT NULL,
    nonce TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    rotated_at TEXT,
    PRIMARY KEY (customer_id, client_id)
  );
  CREATE TABLE cluster_keys (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // 7 (periodic caps): as SQLite's migration 8.
  `
  CREATE TABLE quota_bases (
    customer_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    period_start BIGINT NOT NULL,
    up BIGINT NOT NULL,
    down BIGINT NOT NULL,
    PRIMARY KEY (customer_id, scope, entity_id, period_start)
  );
  CREATE INDEX quota_bases_by_age ON quota_bases (period_start);
  `,
  // 8 (webhooks): endpoints, the durable outbox, the event-log cursor (see SQLite's entry).
  `
  CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    secret_enc TEXT NOT NULL,
    secret_prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX webhooks_by_customer ON webhooks (customer_id, created_at);
  CREATE TABLE webhook_deliveries (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    order_key TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until BIGINT,
    last_status_code INTEGER,
    last_error TEXT,
    created_at TEXT NOT NULL,
    delivered_at TEXT
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
  CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, order_key, status, seq);
  CREATE TABLE webhook_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), last_event_id BIGINT NOT NULL);
  INSERT INTO webhook_cursor (id, last_event_id) SELECT 1, COALESCE(MAX(id), 0) FROM events;
  `,
  // 9 (cluster limits and node TLS): as SQLite's migration 10.
  `
  CREATE TABLE node_grants (
    node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    used_up BIGINT NOT NULL DEFAULT 0,
    used_down BIGINT NOT NULL DEFAULT 0,
    granted_up BIGINT NOT NULL DEFAULT 0,
    granted_down BIGINT NOT NULL DEFAULT 0,
    gen INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (customer_id, client_id, node_id)
  );
  ALTER TABLE nodes ADD COLUMN tls BOOLEAN NOT NULL DEFAULT FALSE;
  ALTER TABLE nodes ADD COLUMN tls_pcs TEXT;
  ALTER TABLE nodes ADD COLUMN relay_port INTEGER;
  ALTER TABLE nodes ADD COLUMN relay_pcs TEXT;
  ALTER TABLE sessions ADD COLUMN claimed_at BIGINT;
  `,
  // 10: the last report applied of each instance's counter journal (cluster/journal.ts), so a
  // report resent after a crash or an outage is applied exactly once.
  `
  CREATE TABLE journal_seqs (
    journal_id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
  );
  `,
  // 11 (webhook health): as SQLite's migration 11.
  `
  ALTER TABLE webhooks ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE webhooks ADD COLUMN failing_since TEXT;
  ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT;
  ALTER TABLE webhooks ADD COLUMN disabled_at TEXT;
  ALTER TABLE webhooks ADD COLUMN dropped BIGINT NOT NULL DEFAULT 0;
  CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, status, seq);
  `,
  // 12 (crash repair): as SQLite's migration 12.
  `
  ALTER TABLE nodes ADD COLUMN boot_id TEXT;
  ALTER TABLE nodes ADD COLUMN boot_repaired BOOLEAN NOT NULL DEFAULT FALSE;
  ALTER TABLE session_placements ADD COLUMN moved_from TEXT;
  CREATE INDEX placements_by_moved_from ON session_placements (moved_from);
  `,
];
