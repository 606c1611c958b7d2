// A write the database refused for a reason no request can fix: the disk is full, the disk failed,
// the file is read-only. The API answers it as `service_unavailable` with the reason in words and a
// Retry-After (the operator frees space; the client retries), never as an unexplained 500; the
// database's own words go to the log (its `cause`). The statement's transaction is rolled back
// whole: nothing of the request was saved.
import { ApiError } from '../../contract/errors.ts';

/** Seconds a client is told to wait: long enough for a person to free space. */
export const UNWRITABLE_RETRY_SECONDS = 10;

type Reason = 'disk_full' | 'io_error' | 'read_only';

const WORDS: Record<Reason, string> = {
  disk_full: 'the disk holding it is full',
  io_error: 'the disk reported an I/O error',
  read_only: 'it is read-only (a read-only file or folder, or a standby server)',
};

export class DatabaseUnwritable extends ApiError {
  readonly retryAfterSeconds = UNWRITABLE_RETRY_SECONDS;
  constructor(reason: Reason, cause: unknown) {
    super('service_unavailable', `The database cannot be written: ${WORDS[reason]}. Nothing of this request was saved; retry once the operator has fixed it.`,
      { reason, retry_after: UNWRITABLE_RETRY_SECONDS });
    this.cause = cause;
  }
}

// SQLite's primary result codes (errcode & 0xff): SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL.
const SQLITE_REASONS: Record<number, Reason> = { 8: 'read_only', 10: 'io_error', 13: 'disk_full' };
// PostgreSQL's SQLSTATEs: disk_full, io_error, read_only_sql_transaction (a standby, or read-only mode).
const PG_REASONS: Record<string, Reason> = { '53100': 'disk_full', '58030': 'io_error', '25006': 'read_only' };

/** `err` as DatabaseUnwritable when it is one of those refusals (node:sqlite or pg), else unchanged. */
export function unwritable(err: unknown): unknown {
  const e = err as { errcode?: unknown; code?: unknown } | null;
  const reason = typeof e?.errcode === 'number' ? SQLITE_REASONS[e.errcode & 0xff] : typeof e?.code === 'string' ? PG_REASONS[e.code] : undefined;
  return reason ? new DatabaseUnwritable(reason, err) : err;
}
