// The answer of every operation that crosses IPC: a value or the API's error record, never a
// throw, so the record (status, code, message, details) survives the boundary intact.

/** The error record's content, plus the HTTP status (0 when the server could not be reached). */
export interface ApiErrorInfo {
  status: number;
  code: string;
  message: string;
  details: Record<string, unknown>;
  /** Seconds to wait, from Retry-After on 429. */
  retryAfter?: number;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: ApiErrorInfo };

/** A failed Result with the error record the API would have sent. */
export function fail<T>(status: number, code: string, message: string, details: Record<string, unknown> = {}): Result<T> {
  return { ok: false, error: { status, code, message, details } };
}
