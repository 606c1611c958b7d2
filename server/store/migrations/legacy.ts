// Schema versions 1 to 12 as released before one list served both databases (index.ts). Both made the
// same tables in their own order, so version N is not the same change on both: each table or change is
// written once (first tables here, later ones in legacy-changes.ts, with index.ts's fragments) and each
// database's list names the pieces in its release order. Databases never rerun applied versions, so an
// entry may be re-expressed only if it expands to exactly the released DDL: the same text on SQLite
// (which stores it; test/store/legacy-ddl.test.ts pins it), the same catalog on PostgreSQL.
import { AUDIT_LOG, CLUSTER_LIMITS, CRASH_REPAIR, JOURNAL_SEQS, QUOTA_BASES, REPORT_SEQ, SESSION_EXPIRY, USAGE_BUCKETS, WEBHOOKS, WEBHOOK_HEALTH } from './legacy-changes.ts';

const CUSTOMERS = `
  CREATE TABLE customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
  );`;

/** PostgreSQL's tokens also get `seq`, insertion order like SQLite's rowid (same-millisecond listings agree). */
const tokens = (seq: string) => `
  CREATE TABLE tokens (
    id TEXT PRIMARY KEY,${seq}
    customer_id TEXT NOT NULL REFERENCES customers(id),
    role TEXT NOT NULL CHECK (role IN ('owner', 'agent')),
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );`;

const SESSIONS_AND_LIMITS = `
  CREATE TABLE sessions (
    seq {id},
    id TEXT NOT NULL UNIQUE,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    client_id TEXT NOT NULL,
    zone TEXT NOT NULL,
    connection_type TEXT NOT NULL,
    reusable {bool} NOT NULL,
    paused {bool} NOT NULL DEFAULT {false},
    status TEXT NOT NULL DEFAULT 'created',
    uploaded_bytes {bigint} NOT NULL DEFAULT 0,
    downloaded_bytes {bigint} NOT NULL DEFAULT 0,
    duration {bigint} NOT NULL DEFAULT 0,
    connections {bigint} NOT NULL DEFAULT 0,
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
  );`;

/** PostgreSQL only: a table of one row holding one counter, starting at 0. */
const counterRow = (table: string, column: string) => `
  CREATE TABLE ${table} (
    one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    ${column} BIGINT NOT NULL
  );
  INSERT INTO ${table} (one, ${column}) VALUES (true, 0);`;

/** PostgreSQL's event ids come from this one row, updated in the inserting statement (repos/events.ts). */
const EVENT_COUNTER = counterRow('event_counter', 'last_id');

/** The event log; `id` is allocated by SQLite, and by EVENT_COUNTER on PostgreSQL. */
const events = (id: string) => `
  CREATE TABLE events (
    id ${id},
    customer_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    created_at TEXT NOT NULL,
    duration {bigint} NOT NULL,
    downloaded_bytes {bigint} NOT NULL,
    uploaded_bytes {bigint} NOT NULL
  );
  CREATE INDEX events_by_customer ON events (customer_id, id);
  CREATE INDEX events_by_time ON events (created_at);`;

/** PostgreSQL only: bumped with every token change; the token caches of all instances watch it. */
const TOKEN_VERSION = counterRow('token_version', 'version');

/**
 * Subscriptions (one per client of a customer). `nonce` is random; the URL secret is
 * HMAC(server key, nonce) and only its SHA-256 is stored here (server/subscriptions/secret.ts).
 */
const SUBSCRIPTIONS = `
  CREATE TABLE subscriptions (
    customer_id TEXT NOT NULL REFERENCES customers(id),
    client_id TEXT NOT NULL,
    nonce TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    rotated_at TEXT,
    PRIMARY KEY (customer_id, client_id)
  );`;

/** PostgreSQL only: the cluster's shared keys (repos/cluster-keys.ts; on SQLite, files in the data folder). */
const CLUSTER_KEYS = `
  CREATE TABLE cluster_keys (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );`;

/** Data-plane nodes and each session's placement. A node is "up" when its last contact is within 10 s. */
const NODES = `
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
    last_contact {time}
  );
  CREATE INDEX nodes_by_zone ON nodes (zone, last_contact);
  CREATE TABLE session_placements (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    placed_at TEXT NOT NULL
  );
  CREATE INDEX placements_by_node ON session_placements (node_id);`;

/** Versions 1 to 12 of each database: the pieces of each version, in the order it released them. */
const SQLITE: string[][] = [
  [CUSTOMERS, tokens(''), SESSIONS_AND_LIMITS, events('INTEGER PRIMARY KEY AUTOINCREMENT')],
  [SUBSCRIPTIONS],
  [NODES],
  [REPORT_SEQ],
  [USAGE_BUCKETS],
  [AUDIT_LOG],
  [SESSION_EXPIRY],
  [QUOTA_BASES],
  [WEBHOOKS],
  [CLUSTER_LIMITS],
  [WEBHOOK_HEALTH],
  [CRASH_REPAIR],
];
const POSTGRES: string[][] = [
  [CUSTOMERS, tokens('\n    seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,'), SESSIONS_AND_LIMITS, EVENT_COUNTER, events('BIGINT PRIMARY KEY'), TOKEN_VERSION, NODES],
  [REPORT_SEQ],
  [USAGE_BUCKETS],
  [AUDIT_LOG],
  [SESSION_EXPIRY],
  [SUBSCRIPTIONS, CLUSTER_KEYS],
  [QUOTA_BASES],
  [WEBHOOKS],
  [CLUSTER_LIMITS],
  [JOURNAL_SEQS],
  [WEBHOOK_HEALTH],
  [CRASH_REPAIR],
];

/** Versions 1 to 12, each database's own. */
export const LEGACY: readonly { sqlite: string; postgres: string }[] = SQLITE.map((pieces, i) => ({ sqlite: pieces.join('\n'), postgres: POSTGRES[i].join('\n') }));
