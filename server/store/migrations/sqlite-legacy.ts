// The SQLite schema's first twelve versions, as released before one migration list served both
// databases (index.ts). Never edit an entry: databases in the field recorded them.
/** SQLite versions 1 to 12, as released. */
export const SQLITE_LEGACY: readonly string[] = [
  // 1: customers, tokens, sessions, limits, events
  `
  CREATE TABLE customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
  );
  CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    role TEXT NOT NULL CHECK (role IN ('owner', 'agent')),
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE TABLE sessions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    client_id TEXT NOT NULL,
    zone TEXT NOT NULL,
    connection_type TEXT NOT NULL,
    reusable INTEGER NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'created',
    uploaded_bytes INTEGER NOT NULL DEFAULT 0,
    downloaded_bytes INTEGER NOT NULL DEFAULT 0,
    duration INTEGER NOT NULL DEFAULT 0,
    connections INTEGER NOT NULL DEFAULT 0,
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
  CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    customer_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    created_at TEXT NOT NULL,
    duration INTEGER NOT NULL,
    downloaded_bytes INTEGER NOT NULL,
    uploaded_bytes INTEGER NOT NULL
  );
  CREATE INDEX events_by_customer ON events (customer_id, id);
  CREATE INDEX events_by_time ON events (created_at);
  `,
  // 2: subscriptions (one per client of a customer). `nonce` is random; the URL secret is
  // HMAC(server key, nonce) and only its SHA-256 is stored here (see server/subscriptions/secret.ts).
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
  `,
  // 3: the catalogue's data-plane nodes and where each session is placed (as on PostgreSQL,
  // server/store/pg/schema.ts). last_contact is an ISO time; "up" means within 10 s of now.
  `
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
    last_contact TEXT
  );
  CREATE INDEX nodes_by_zone ON nodes (zone, last_contact);
  CREATE TABLE session_placements (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    placed_at TEXT NOT NULL
  );
  CREATE INDEX placements_by_node ON session_placements (node_id);
  `,
  // 4: the last report (by sequence number) applied per node (`node run`), so that a report
  // resent after a lost acknowledgement is not counted twice, whichever process receives it.
  `ALTER TABLE nodes ADD COLUMN report_seq INTEGER NOT NULL DEFAULT 0;`,
  // 5 (usage history): traffic per session and node in time buckets (server/usage/history.ts).
  // `step` is minute, hour or day; `start` the bucket's start in epoch milliseconds (UTC). The
  // writer adds to minute buckets; compaction rolls minutes older than a day into hours, hours
  // older than 90 days into days, and prunes days past the retention. customer, client and zone
  // are copied from the session so that the dashboards filter and group without a join.
  `
  CREATE TABLE usage_buckets (
    step TEXT NOT NULL CHECK (step IN ('minute', 'hour', 'day')),
    start INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    node TEXT NOT NULL,
    customer_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    zone TEXT NOT NULL,
    uploaded_bytes INTEGER NOT NULL,
    downloaded_bytes INTEGER NOT NULL,
    UNIQUE (session_id, step, start, node)
  );
  CREATE INDEX usage_by_customer ON usage_buckets (customer_id, step, start);
  CREATE INDEX usage_by_client ON usage_buckets (customer_id, client_id, step, start);
  CREATE INDEX usage_by_age ON usage_buckets (step, start);
  `,
  // 6 (audit trail): every change made through the API or the command line, with who
  // made it (token id and role, never the token), what, and the values before and after (JSON).
  `
  CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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
  // 7 (session expiry): when a session ends by itself (ISO time), or NULL.
  `
  ALTER TABLE sessions ADD COLUMN expires_at TEXT;
  CREATE INDEX sessions_by_expiry ON sessions (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // 8 (periodic caps): each entity's lifetime totals at the start of its current period
  // (server/quota/*): global (entity: the customer), client (client_id) or session (id).
  `
  CREATE TABLE quota_bases (
    customer_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    period_start INTEGER NOT NULL,
    up INTEGER NOT NULL,
    down INTEGER NOT NULL,
    PRIMARY KEY (customer_id, scope, entity_id, period_start)
  );
  CREATE INDEX quota_bases_by_age ON quota_bases (period_start);
  `,
  // 9 (webhooks): the endpoints (secret AES-GCM encrypted, server/webhooks/secret.ts), the
  // durable outbox of deliveries (times in epoch ms; one lease per sender), and the cursor of the
  // event log the outbox has read up to (starting at the newest event: nothing older is sent).
  `
  CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    secret_enc TEXT NOT NULL,
    secret_prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX webhooks_by_customer ON webhooks (customer_id, created_at);
  CREATE TABLE webhook_deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    order_key TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_until INTEGER,
    last_status_code INTEGER,
    last_error TEXT,
    created_at TEXT NOT NULL,
    delivered_at TEXT
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
  CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, order_key, status, seq);
  CREATE TABLE webhook_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), last_event_id INTEGER NOT NULL);
  INSERT INTO webhook_cursor (id, last_event_id) SELECT 1, COALESCE(MAX(id), 0) FROM events;
  `,
  // 10 (cluster limits and node TLS): byte grants per node and capped entity
  // (server/cluster/grants.ts: a node moves at most \`granted - used\` more bytes of a customer, or
  // of one client with client_id set; both cumulative per node, never reset), and what a node
  // reported of its listeners' TLS (its certificate's SHA-256 when it is self-signed, for links' pcs),
  // when a node last claimed a session's first connection (epoch ms: central max_sessions), and
  // its geo relay listener (port, and its self-signed certificate's SHA-256: server/cluster/geo.ts).
  `
  CREATE TABLE node_grants (
    node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    used_up INTEGER NOT NULL DEFAULT 0,
    used_down INTEGER NOT NULL DEFAULT 0,
    granted_up INTEGER NOT NULL DEFAULT 0,
    granted_down INTEGER NOT NULL DEFAULT 0,
    gen INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (customer_id, client_id, node_id)
  );
  ALTER TABLE nodes ADD COLUMN tls INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE nodes ADD COLUMN tls_pcs TEXT;
  ALTER TABLE nodes ADD COLUMN relay_port INTEGER;
  ALTER TABLE nodes ADD COLUMN relay_pcs TEXT;
  ALTER TABLE sessions ADD COLUMN claimed_at INTEGER;
  `,
  // 11 (webhook health): failed attempts in a row and since when, why and when the server
  // disabled an endpoint, the pending deliveries dropped over the cap (server/store/repos/webhooks.ts).
  `
  ALTER TABLE webhooks ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE webhooks ADD COLUMN failing_since TEXT;
  ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT;
  ALTER TABLE webhooks ADD COLUMN disabled_at TEXT;
  ALTER TABLE webhooks ADD COLUMN dropped INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, status, seq);
  `,
  // 12 (crash repair, server/cluster/crash-repair.ts): the random id of the node's running process
  // (sent on its channel's first report; another one means the node restarted), and whether the
  // sessions of that process were repaired already because the node fell silent; and the node a
  // session was moved away from (its late reports still count their bytes).
  `
  ALTER TABLE nodes ADD COLUMN boot_id TEXT;
  ALTER TABLE nodes ADD COLUMN boot_repaired INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE session_placements ADD COLUMN moved_from TEXT;
  CREATE INDEX placements_by_moved_from ON session_placements (moved_from);
  `,
];
