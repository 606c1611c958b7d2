// The error record's pieces: every decided code with its status (contract/errors.ts), and
// plugins/errors.ts turning validation and framework errors into it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, ERROR_STATUS, PROXY_ERRORS, PROXY_ERROR_STATUS, proxyErrorBody } from '../../server/contract/errors.ts';
import { describeValidation, toApiError, WriteRefusals } from '../../server/plugins/errors.ts';
import { DatabaseUnwritable } from '../../server/store/sql/unwritable.ts';

test('every decided error code exists with its status', () => {
  const decided: Record<string, number> = {
    invalid_request: 400, unauthorized: 401, forbidden: 403, not_found: 404, zone_not_found: 404, session_not_found: 404,
    limits_not_found: 404, subscription_not_found: 404, client_not_found: 404, device_not_found: 404, session_not_reusable: 400, session_already_paused: 400, session_not_paused: 400, session_ended: 400,
    zone_unavailable: 422, unsupported_connection_type: 422, client_disabled: 422, client_expired: 422, method_not_allowed: 405, request_timeout: 408, payload_too_large: 413,
    unsupported_media_type: 415, request_header_too_large: 431, rate_limited: 429, internal_error: 500, service_unavailable: 500,
  };
  assert.deepEqual({ ...ERROR_STATUS }, decided);
  const e = new ApiError('zone_not_found', 'no', { zone: 'x' });
  assert.equal(e.statusCode, 404);
  assert.deepEqual(e.toBody(), { error: { code: 'zone_not_found', message: 'no', details: { zone: 'x' } } });
  assert.deepEqual(new ApiError('forbidden', 'm').toBody().error.details, {});
});

test('every proxy error code exists with its status and a registered RFC 9209 error type', () => {
  const decided: Record<string, number> = {
    invalid_request: 400, proxy_unknown_param: 400, proxy_duplicate_param: 400, proxy_bad_param: 400, proxy_city_without_country: 400,
    proxy_auth_required: 407, session_refused: 403, session_paused: 403, session_expired: 403, client_disabled: 403, over_cap: 403,
    destination_forbidden: 403, location_unavailable: 412, max_sessions: 429, connection_limit: 429, request_header_too_large: 431,
    bad_gateway: 502, sticky_exit_gone: 503, proxy_unavailable: 503, gateway_timeout: 504,
  };
  assert.deepEqual({ ...PROXY_ERROR_STATUS }, decided);
  // RFC 9209 section 2.3, the registered Proxy Error Types
  const registered = new Set(['dns_timeout', 'dns_error', 'destination_not_found', 'destination_unavailable', 'destination_ip_prohibited',
    'destination_ip_unroutable', 'connection_refused', 'connection_terminated', 'connection_timeout', 'connection_read_timeout',
    'connection_write_timeout', 'connection_limit_reached', 'tls_protocol_error', 'tls_certificate_error', 'tls_alert_received',
    'http_request_error', 'http_request_denied', 'http_response_incomplete', 'http_response_header_section_size', 'http_response_header_size',
    'http_response_body_size', 'http_response_trailer_section_size', 'http_response_trailer_size', 'http_response_transfer_coding',
    'http_response_content_coding', 'http_response_timeout', 'http_upgrade_failed', 'http_protocol_error', 'proxy_internal_response',
    'proxy_internal_error', 'proxy_configuration_error', 'proxy_loop_detected']);
  for (const [code, [, type]] of Object.entries(PROXY_ERRORS)) assert.ok(registered.has(type), `${code}: ${type}`);
  assert.deepEqual(proxyErrorBody('location_unavailable', 'no', { cities: ['a'] }), { error: { code: 'location_unavailable', message: 'no', details: { cities: ['a'] } } });
  assert.deepEqual(proxyErrorBody('bad_gateway', 'm').error.details, {});
});

test('describeValidation names unknown, missing and invalid fields', () => {
  const e = describeValidation(
    [
      { instancePath: '', keyword: 'additionalProperties', params: { additionalProperty: 'colour' } },
      { instancePath: '', keyword: 'required', params: { missingProperty: 'zone' } },
      { instancePath: '/client_id', keyword: 'pattern', message: 'must match pattern' },
      { instancePath: '/client_id', keyword: 'type', message: 'must be string' },
      { instancePath: '/downloaded_bytes', keyword: 'anyOf', message: 'must match a schema in anyOf' },
    ],
    'body',
  );
  assert.equal(e.code, 'invalid_request');
  assert.equal(e.statusCode, 400);
  assert.deepEqual(e.details, {
    location: 'body',
    unknown_fields: ['colour'],
    fields: [
      { field: 'zone', problem: 'is required' },
      { field: 'client_id', problem: 'must match pattern' },
    ],
  });
  assert.match(e.message, /^Invalid request: unknown field: colour; zone is required; client_id must match pattern\.$/);
  const q = describeValidation([{ instancePath: '/limit', keyword: 'maximum', message: 'must be <= 500' }], 'querystring');
  assert.match(q.message, /^Invalid query parameter: limit must be <= 500\.$/);
  const empty = describeValidation([{ instancePath: '', keyword: 'minProperties' }], 'body');
  assert.deepEqual(empty.details.fields, [{ field: 'body', problem: 'must name at least one field' }]);
});

test('toApiError: framework errors map to their codes; anything else is internal_error without its message', () => {
  const fe = (code: string, statusCode?: number) => Object.assign(new Error(`secret ${code} at /work/x.ts:1`), { code, statusCode });
  assert.equal(toApiError(fe('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415)).code, 'unsupported_media_type');
  assert.equal(toApiError(fe('FST_ERR_CTP_BODY_TOO_LARGE', 413)).code, 'payload_too_large');
  assert.equal(toApiError(fe('FST_ERR_CTP_INVALID_JSON_BODY', 400)).code, 'invalid_request');
  assert.equal(toApiError(fe('FST_ERR_BAD_URL', 400)).code, 'invalid_request');
  assert.equal(toApiError(fe('FST_ERR_MAX_PARAM_LENGTH', 414)).code, 'invalid_request');
  assert.equal(toApiError(fe('SOMETHING', 413)).code, 'payload_too_large');
  assert.equal(toApiError(new SyntaxError('x')).code, 'invalid_request');
  const internal = toApiError(new Error('SQLITE_MISUSE: database is not open at /work/main/server/store/store.ts:12'));
  assert.equal(internal.code, 'internal_error');
  assert.equal(internal.statusCode, 500);
  assert.ok(!internal.message.includes('SQLITE') && !internal.message.includes('/work'));
  assert.deepEqual(internal.details, {});
  const own = new ApiError('session_ended', 'ended');
  assert.equal(toApiError(own), own);
});

test('WriteRefusals keeps only the database\'s own refusals, until a write succeeds', () => {
  const r = new WriteRefusals();
  // GET /v2/health's own unhealthy answer (and the unreachable database's) must not count, or every check would renew it.
  r.note(new ApiError('service_unavailable', 'The database refused a write 3 s ago (disk full).', { reason: 'disk_full', retry_after: 5 }));
  r.note(new ApiError('service_unavailable', 'The database did not answer a read within 2 s.', { reason: 'database_timeout', retry_after: 5 }));
  assert.equal(r.recent(10_000), undefined);
  r.note(new DatabaseUnwritable('read_only', new Error('cannot execute INSERT in a read-only transaction')));
  assert.equal(r.recent(10_000)?.reason, 'read_only');
  r.cleared();
  assert.equal(r.recent(10_000), undefined);
});
