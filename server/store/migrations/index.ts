// The schema of both databases, as one numbered list: version N means the same tables, columns
// and indexes on SQLite and on PostgreSQL (test/store/schema-parity.test.ts compares them).
// Versions 1 to 12 predate the one store: each database reached the version-12 schema by its
// own released steps (legacy.ts). From 13 on, one entry serves both, written once in the DDL
// both accept, with three fragments for what differs in kind:
// - `{id}`: an integer key the database allocates in insertion order;
// - `{time}`: a time the database's clock writes (node contact);
// - `{bool}`: a flag (0/1 on SQLite).
// The legacy versions also use `{bigint}`, `{serial}`, `{false}` and `{true}`, to expand to
// exactly the text they were released with; a new entry writes BIGINT, false and true, which
// both accept. Never change what a released entry expands to; append a new one.
import { scalar, type Dialect } from '../sql/op.ts';
import { LEGACY } from './legacy.ts';
import { JOURNAL_SEQS } from './legacy-changes.ts';

/** One version: the same DDL for both, or each database's own (legacy, and what only one of them has). */
export type Migration = string | { sqlite: string; postgres: string };

const SHARED: Migration[] = [
  // 13: the last report applied of each instance's counter journal (cluster/journal.ts), on
  // SQLite too (PostgreSQL made it at its version 10), so one report operation serves both.
  JOURNAL_SEQS.trim().replace('CREATE TABLE', 'CREATE TABLE IF NOT EXISTS'),
  // 14 (webhook health): the last failed attempt's error, as the owner may read it, and when it
  // failed (server/store/repos/webhooks.ts recordFailure).
  `ALTER TABLE webhooks ADD COLUMN last_error TEXT;
  ALTER TABLE webhooks ADD COLUMN last_error_at TEXT;`,
  // 15: what the owner adds to every subscription feed and page of the customer (support link,
  // profile web page, announcement); one row per customer, made by the first change.
  `CREATE TABLE IF NOT EXISTS subscription_settings (
    customer_id TEXT PRIMARY KEY REFERENCES customers(id),
    support_url TEXT,
    profile_web_page_url TEXT,
    announce TEXT,
    updated_at TEXT NOT NULL
  );`,
  // 16 (clients): one row per client the owner set something for (store/repos/clients.ts):
  // disabled, its expiry, its override of the client limits template (a JSON object of fields,
  // with the override record's id and times), and its last usage reset (totals then).
  `CREATE TABLE IF NOT EXISTS clients (
    customer_id TEXT NOT NULL REFERENCES customers(id),
    client_id TEXT NOT NULL,
    disabled {bool} NOT NULL,
    expires_at TEXT,
    limits_id TEXT,
    limits TEXT,
    limits_created_at TEXT,
    limits_updated_at TEXT,
    reset_at TEXT,
    reset_up BIGINT,
    reset_down BIGINT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (customer_id, client_id)
  );`,
  // 17: the devices that fetched a client's subscription feed with an `x-hwid` header
  // (server/store/repos/devices.ts), for the client's max_devices; newest last_seen first.
  `CREATE TABLE IF NOT EXISTS client_devices (
    customer_id TEXT NOT NULL REFERENCES customers(id),
    client_id TEXT NOT NULL,
    hwid TEXT NOT NULL,
    device_os TEXT,
    os_version TEXT,
    device_model TEXT,
    user_agent TEXT,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    PRIMARY KEY (customer_id, client_id, hwid)
  );
  CREATE INDEX IF NOT EXISTS client_devices_last_seen ON client_devices (customer_id, client_id, last_seen);`,
  // 18: usage thresholds crossed (store/repos/thresholds.ts): one row per customer, scope,
  // entity, direction, threshold (50, 80, 100) and period key, inserted by the one caller that
  // wins it (the usage_threshold webhook goes out once); period_start (0: lifetime or rolling) prunes.
  `CREATE TABLE IF NOT EXISTS usage_thresholds (
    customer_id TEXT NOT NULL REFERENCES customers(id),
    scope TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    direction TEXT NOT NULL,
    threshold INTEGER NOT NULL,
    period_key TEXT NOT NULL,
    period_start BIGINT NOT NULL,
    used_bytes BIGINT NOT NULL,
    cap_bytes BIGINT NOT NULL,
    crossed_at TEXT NOT NULL,
    PRIMARY KEY (customer_id, scope, entity_id, direction, threshold, period_key)
  );
  CREATE INDEX IF NOT EXISTS usage_thresholds_period ON usage_thresholds (period_start);`,
  // 19 (scale, bench/scale.ts): a session's event stream (SSE ?session_id=, from a Last-Event-ID
  // or its `tail` newest) reads that session's rows, not every event of the customer after the
  // id; the sessions of one status (the session list's status filter, the live ones of the
  // cluster's speed shares, the start-up repair of sessions left active) are found by the index,
  // not by reading every session.
  `CREATE INDEX IF NOT EXISTS events_by_session ON events (customer_id, session_id, id);
  CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (status, customer_id, seq);`,
  // 20 (support across instances, PostgreSQL's cluster; never used by a single SQLite process):
  // the control-plane instances seen lately (each marks itself every 20 s), who are asked and
  // named when silent; and the answers to a support read, one row per request and instance,
  // read and deleted by the asker, swept after a minute (store/repos/support-answers.ts).
  `CREATE TABLE IF NOT EXISTS control_instances (
    instance_id TEXT PRIMARY KEY,
    seen_at TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS support_answers (
    request_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (request_id, instance_id)
  );
  CREATE INDEX IF NOT EXISTS support_answers_created ON support_answers (created_at);`,
  // 21 (PostgreSQL only): every statement that writes a table the cached reads read (sessions,
  // clients, limits: READ_TABLES in sql/channels.ts) notifies `vad_reads` with the table's name,
  // once per table and transaction (identical notifications fold), so each instance drops its
  // cached reads of it (pg/read-cache.ts). SQLite sees other writers through data_version.
  // INSERTs into sessions notify nothing (a creation would pay the notification, and PostgreSQL
  // serialises notifying commits): the cached reads of sessions are reads of one session by its
  // id, kept only when they found it, which a new row cannot change (INSERT_SILENT).
  {
    sqlite: 'SELECT 1;',
    postgres: `CREATE OR REPLACE FUNCTION vad_notify_reads() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('vad_reads', TG_TABLE_NAME);
      RETURN NULL;
    END $$;
    CREATE TRIGGER vad_reads_sessions AFTER UPDATE OR DELETE OR TRUNCATE ON sessions
      FOR EACH STATEMENT EXECUTE FUNCTION vad_notify_reads();
    CREATE TRIGGER vad_reads_clients AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON clients
      FOR EACH STATEMENT EXECUTE FUNCTION vad_notify_reads();
    CREATE TRIGGER vad_reads_limits AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON limits
      FOR EACH STATEMENT EXECUTE FUNCTION vad_notify_reads();`,
  },
];

export const MIGRATIONS: readonly Migration[] = [...LEGACY, ...SHARED];

type Fragment = 'id' | 'time' | 'bool' | 'bigint' | 'serial' | 'false' | 'true';
const TYPES: Record<Dialect, Record<Fragment, string>> = {
  sqlite: { id: 'INTEGER PRIMARY KEY AUTOINCREMENT', time: 'TEXT', bool: 'INTEGER', bigint: 'INTEGER', serial: 'INTEGER PRIMARY KEY AUTOINCREMENT', false: '0', true: '1' },
  postgres: { id: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY', time: 'TIMESTAMPTZ', bool: 'BOOLEAN', bigint: 'BIGINT', serial: 'BIGSERIAL PRIMARY KEY', false: 'false', true: 'true' },
};

/** The DDL of version `v` (1-based) for one database. */
export function migrationSql(v: number, d: Dialect): string {
  const m = MIGRATIONS[v - 1];
  return (typeof m === 'string' ? m : m[d]).replace(/\{(id|time|bool|bigint|serial|false|true)\}/g, (_x, k: Fragment) => TYPES[d][k]);
}

/** The versions a database at version `current` has yet to apply, in order (none when it is newer: refused). */
export function pendingVersions(current: number): number[] {
  if (current > MIGRATIONS.length) throw new Error(`database schema version ${current} is newer than this program (${MIGRATIONS.length})`);
  return Array.from({ length: MIGRATIONS.length - current }, (_, i) => current + 1 + i);
}

/** The schema version the migrations brought the database to (0 before the first): SQLite's user_version, PostgreSQL's schema_migrations. */
const schemaVersion = () => scalar({ sqlite: 'PRAGMA user_version', postgres: 'SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations' });

export const migrationOps = { schemaVersion };
