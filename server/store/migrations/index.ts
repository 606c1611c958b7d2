// The schema of both databases as one numbered list: version N has the same tables, columns and
// indexes on SQLite and PostgreSQL (test/store/schema-parity.test.ts compares them). 1 to 12 are each
// database's own released steps (legacy.ts); from 13 on one entry serves both, with fragments for what
// differs: `{id}` an integer key allocated in insertion order, `{time}` a time the database's clock
// writes (node contact), `{bool}` a flag (0/1 on SQLite). Legacy entries also use `{bigint}`, `{serial}`,
// `{false}` and `{true}` to expand to exactly their released text; new ones write BIGINT, false and true.
// Never change what a released entry expands to; append a new one.
import { scalar, type Dialect } from '../sql/op.ts';
import { LEGACY } from './legacy.ts';
import { JOURNAL_SEQS } from './legacy-changes.ts';

/** One version: the same DDL for both, or each database's own (legacy, and what only one of them has). */
export type Migration = string | { sqlite: string; postgres: string };

const SHARED: Migration[] = [
  // 13: the last report applied of each instance's counter journal (cluster/journal.ts), on
  // SQLite too (PostgreSQL made it at its version 10), so one report operation serves both.
  JOURNAL_SEQS.trim().replace('CREATE TABLE', 'CREATE TABLE IF NOT EXISTS'),
  // 14: the last failed webhook attempt's error, as the owner may read it, and its time (repos/webhooks.ts).
  `ALTER TABLE webhooks ADD COLUMN last_error TEXT;
  ALTER TABLE webhooks ADD COLUMN last_error_at TEXT;`,
  // 15: what the owner adds to every subscription feed and page of the customer; row made by the first change.
  `CREATE TABLE IF NOT EXISTS subscription_settings (
    customer_id TEXT PRIMARY KEY REFERENCES customers(id),
    support_url TEXT,
    profile_web_page_url TEXT,
    announce TEXT,
    updated_at TEXT NOT NULL
  );`,
  // 16: a row per client the owner set something for (repos/clients.ts): disabled, expiry, its override of
  // the client limits template (JSON fields, its id and times), and its last usage reset (totals then).
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
  // 17: devices that fetched a client's feed with `x-hwid` (repos/devices.ts), for max_devices; newest first.
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
  // 18: usage thresholds (50, 80, 100) crossed (repos/thresholds.ts); only the caller whose insert wins sends
  // the usage_threshold webhook. period_start (0: lifetime or rolling) is for pruning.
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
  // 19 (bench/scale.ts): a session's SSE stream (?session_id=) reads its own events, not all the customer's
  // after the id; sessions of one status (list filter, live ones for speed shares, start-up repair of those
  // left active) are found by index instead of reading every session.
  `CREATE INDEX IF NOT EXISTS events_by_session ON events (customer_id, session_id, id);
  CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (status, customer_id, seq);`,
  // 20 (PostgreSQL cluster support; unused by a lone SQLite process): control-plane instances seen lately
  // (each marks itself every 20 s; all are asked, silent ones named), and support-read answers per request
  // and instance, read and deleted by the asker, swept after a minute (repos/support-answers.ts).
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
  // 21 (PostgreSQL only): each statement writing a cached-read table (READ_TABLES in sql/channels.ts)
  // notifies `vad_reads` with the table name, once per table and transaction (identical ones fold), so
  // every instance drops its cached reads of it (pg/read-cache.ts); SQLite sees writers via data_version.
  // Session INSERTs stay silent (PostgreSQL serialises notifying commits): cached session reads are by id
  // and kept only when found, which a new row cannot change (INSERT_SILENT).
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
  // 22 (repos/audit.ts): a session's audit entries by its seq, not its random id, so a creation's entry is
  // appended to the index instead of written to a random page of it (bench/api.ts: session creation).
  `ALTER TABLE audit_log ADD COLUMN session_seq BIGINT;
  UPDATE audit_log SET session_seq = (SELECT seq FROM sessions WHERE sessions.id = audit_log.session_id) WHERE session_id IS NOT NULL;
  DROP INDEX audit_by_session;
  CREATE INDEX audit_by_session_seq ON audit_log (customer_id, session_seq, id);`,
  // 23 (repos/nodes.ts): when a node said it was stopping (a clean stop); it is down from then on, not
  // NODE_UP_SECONDS later. Its next contact clears it.
  `ALTER TABLE nodes ADD COLUMN stopped_at {time};`,
  // 24 (repos/nodes.ts): when a node was found lost (its channel ended without a stop and no instance heard
  // from it since); down from then on. Its next contact clears it.
  `ALTER TABLE nodes ADD COLUMN lost_at {time};`,
  // 25 (repos/nodes.ts): a node's clock less the control plane's, ms, as it reports it (node/clock-watch.ts).
  `ALTER TABLE nodes ADD COLUMN clock_skew_ms BIGINT;`,
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

/**
 * The versions still to apply after `current`, in order, up to `target` (the latest unless an upgrade
 * test builds an older database); throws when the database is newer than this program.
 */
export function pendingVersions(current: number, target = MIGRATIONS.length): number[] {
  if (current > MIGRATIONS.length) throw new Error(`database schema version ${current} is newer than this program (${MIGRATIONS.length})`);
  return Array.from({ length: Math.max(0, Math.min(target, MIGRATIONS.length) - current) }, (_, i) => current + 1 + i);
}

/** The schema version the migrations reached (0 before the first). */
const schemaVersion = () => scalar({ sqlite: 'PRAGMA user_version', postgres: 'SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations' });

/** The database server's clock, ISO with milliseconds (PostgreSQL's machine; SQLite's is this one). */
const databaseClock = () =>
  scalar<string>({ sqlite: "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", postgres: `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` });

export const migrationOps = { schemaVersion, databaseClock };
