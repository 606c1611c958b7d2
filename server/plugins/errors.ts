// One error format for every non-2xx answer: `{ error: { code, message, details } }`.
// 5xx answers never carry a stack trace or an internal message. A route whose answers are not
// JSON (the event stream) writes its error record itself: it names a writer in its route config.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode } from '../contract/errors.ts';
import type { Logger } from '../domain.ts';
import { throttledLine } from '../log.ts';
import { DatabaseUnwritable } from '../store/sql/unwritable.ts';

/** Writes an error record in a route's own format (status, content type and body). */
export type ErrorWriter = (reply: FastifyReply, error: ApiError) => FastifyReply;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** This route's own error format; JSON when absent. Read as soon as the route is matched,
     *  so it also applies to the answers of the guard (400, 401, 403, 429) before the handler. */
    writeError?: ErrorWriter;
  }
}

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Turns ajv's errors into a person-readable message and structured details. */
export function describeValidation(errors: AjvError[], context: string | undefined): ApiError {
  const unknown: string[] = [];
  const problems: { field: string; problem: string }[] = [];
  const allowed = allowedValues(errors, context);
  for (const e of errors) {
    const base = (e.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    const one = allowed.get(base || context || 'body');
    if (one && (e.keyword === 'const' || e.keyword === 'enum')) {
      if (!problems.some((p) => p.field === (base || context || 'body'))) problems.push({ field: base || context || 'body', problem: `must be one of: ${one.join(', ')}` });
      continue;
    }
    if (e.keyword === 'additionalProperties' && typeof e.params?.additionalProperty === 'string') {
      unknown.push(base ? `${base}.${e.params.additionalProperty}` : e.params.additionalProperty);
      continue;
    }
    if (e.keyword === 'required' && typeof e.params?.missingProperty === 'string') {
      problems.push({ field: base ? `${base}.${e.params.missingProperty}` : e.params.missingProperty, problem: 'is required' });
      continue;
    }
    if (e.keyword === 'minProperties') {
      problems.push({ field: base || 'body', problem: 'must name at least one field' });
      continue;
    }
    // anyOf branches (value or null) repeat the same field; keep the first, most useful one.
    if (e.keyword === 'anyOf' || (base && problems.some((p) => p.field === base))) continue;
    problems.push({ field: base || context || 'body', problem: e.message ?? 'is invalid' });
  }
  const parts: string[] = [];
  if (unknown.length) parts.push(`unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`);
  for (const p of problems) parts.push(`${p.field} ${p.problem}`);
  const where = context === 'querystring' ? 'query parameter' : context === 'params' ? 'path parameter' : 'request';
  const details: Record<string, unknown> = { location: context ?? 'body' };
  if (unknown.length) details.unknown_fields = unknown;
  if (problems.length) details.fields = problems;
  return new ApiError('invalid_request', `Invalid ${where}: ${parts.join('; ') || 'does not match the schema'}.`, details);
}

/** The values a field may take, from the `const` branches of a union of literals (and `enum`), by field. */
function allowedValues(errors: AjvError[], context: string | undefined): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of errors) {
    const field = (e.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.') || context || 'body';
    const values = e.keyword === 'const' ? [e.params?.allowedValue] : e.keyword === 'enum' ? (e.params?.allowedValues as unknown[] | undefined) ?? [] : [];
    for (const v of values) if (typeof v === 'string' || typeof v === 'number') out.set(field, [...(out.get(field) ?? []), String(v)]);
  }
  return out;
}

const FASTIFY_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported_media_type', 'Request bodies must be JSON (Content-Type: application/json).'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['invalid_request', 'The Content-Length header does not match the body.'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['payload_too_large', 'The request body is larger than 64 KiB.'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['invalid_request', 'The request body is empty.'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_request', 'The request body is not valid JSON.'],
  FST_ERR_BAD_URL: ['invalid_request', 'The URL is malformed.'],
  FST_ERR_MAX_PARAM_LENGTH: ['invalid_request', 'A path parameter is too long.'],
  FST_ERR_ASYNC_CONSTRAINT: ['invalid_request', 'The request is malformed.'],
};

export function toApiError(err: FastifyError | ApiError | Error): ApiError {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError;
  if (fe.validation) return describeValidation(fe.validation as AjvError[], fe.validationContext);
  if (fe.code && FASTIFY_CODES[fe.code]) {
    const [code, message] = FASTIFY_CODES[fe.code];
    return new ApiError(code, message);
  }
  if (err instanceof SyntaxError || fe.statusCode === 400) return new ApiError('invalid_request', 'The request is malformed.');
  if (fe.statusCode === 413) return new ApiError('payload_too_large', 'The request body is too large.');
  if (fe.statusCode === 415) return new ApiError('unsupported_media_type', 'Request bodies must be JSON (Content-Type: application/json).');
  if (fe.statusCode === 404) return new ApiError('not_found', 'Not found.');
  return new ApiError('internal_error', 'An unexpected error occurred.');
}

/** The matched route's error writer, or undefined (JSON), also when the router failed before matching (frameworkErrors). */
function routeWriter(request: FastifyRequest): ErrorWriter | undefined {
  try {
    return request.routeOptions.config?.writeError;
  } catch {
    return undefined;
  }
}

/** Writes the error record, as JSON unless the route names its own writer. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.statusCode === 429 && !reply.hasHeader('retry-after')) {
    const reset = Number(reply.getHeader('x-ratelimit-reset') ?? 1);
    reply.header('retry-after', String(Math.max(1, reset)));
  }
  // The database is unreachable (PostgreSQL mode): tell the client when to try again.
  const retryAfter = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  if (typeof retryAfter === 'number' && !reply.hasHeader('retry-after')) reply.header('retry-after', String(retryAfter));
  const write = routeWriter(request);
  if (write) return write(reply, error);
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody());
}

/** At most one log line this often while the database is away or unwritable (every request fails alike). */
const OUTAGE_LINE_MS = 1000;

/** Logs a failed request: a fault with its stack; the database away or unwritable without it, and seldom. */
function failureLog(log: Logger): (err: FastifyError, apiError: ApiError, route: string | undefined) => void {
  const outage = throttledLine(OUTAGE_LINE_MS);
  return (err, apiError, route) => {
    if (apiError.code !== 'service_unavailable') {
      log.error({ err: { message: err.message, code: err.code, stack: err.stack }, route }, 'request failed');
      return;
    }
    const cause = (apiError.cause as { message?: unknown } | undefined)?.message;
    outage((alike) => log.error({ err: apiError.message, ...(typeof cause === 'string' ? { cause } : {}), route, ...alike }, 'request failed'));
  };
}

/**
 * What Node's HTTP parser refuses before any request exists (fastify's clientErrorHandler): headers
 * past the 16 KiB limit, a request not received within the request timeout, bytes that are not
 * HTTP. The same error record as every other answer, then the connection is closed.
 */
export function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? new ApiError('request_timeout', 'The request was not received in time; send it again.')
    : err.code === 'HPE_HEADER_OVERFLOW' ? new ApiError('request_header_too_large', 'The request headers are larger than 16 KiB.')
    : new ApiError('invalid_request', 'The request is not valid HTTP/1.1.');
  const body = JSON.stringify(error.toBody());
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

/**
 * The last write the database refused for a reason no request can fix (full disk, I/O error, a
 * read-only standby: store/sql/unwritable.ts), until a write succeeds again; GET /v2/health reads it.
 */
export class WriteRefusals {
  #last: { reason: string; at: number } | undefined;
  /** Only the database's own refusals count: not the health check's answer, which would renew itself at every check. */
  note(error: ApiError): void {
    if (error instanceof DatabaseUnwritable) this.#last = { reason: String(error.details.reason), at: Date.now() };
  }
  cleared(): void {
    this.#last = undefined;
  }
  /** The refusal of the last `ms`, if a write has not succeeded since. */
  recent(ms: number): { reason: string; at: number } | undefined {
    return this.#last && Date.now() - this.#last.at < ms ? this.#last : undefined;
  }
}

export function installErrorHandling(app: FastifyInstance, log: Logger): WriteRefusals {
  const logFailure = failureLog(log);
  const refusals = new WriteRefusals();
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const apiError = toApiError(err);
    if (apiError.statusCode >= 500) logFailure(err, apiError, request.routeOptions.url);
    refusals.note(apiError);
    return sendError(request, reply, apiError);
  });
  // A write answered 2xx: the database takes writes again. A callback hook, as the request log's:
  // on every response, an async one would make a promise each time.
  app.addHook('onResponse', (request, reply, done) => {
    if (request.method !== 'GET' && request.method !== 'HEAD' && reply.statusCode < 300) refusals.cleared();
    done();
  });
  return refusals;
}
