// The stable error codes of the API and the error thrown inside the server.
export const ERROR_STATUS = {
  invalid_request: 400,
  session_not_reusable: 400,
  session_already_paused: 400,
  session_not_paused: 400,
  session_ended: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  zone_not_found: 404,
  session_not_found: 404,
  limits_not_found: 404,
  subscription_not_found: 404,
  device_not_found: 404,
  client_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  request_header_too_large: 431,
  zone_unavailable: 422,
  unsupported_connection_type: 422,
  client_disabled: 422,
  client_expired: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.statusCode = ERROR_STATUS[code];
    this.details = details;
  }
  toBody() {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

/**
 * Codes the HTTP proxy answers with (in the same `{"error":{...}}` record, with `Connection:
 * close`). Kept apart from ERROR_STATUS, the API's decided set, because no API route answers them.
 * Each row: the HTTP status and the RFC 9209 error type its `Proxy-Status` header carries (the
 * code itself goes in `X-Proxy-Error`). `bad_gateway` names a finer type when the failure is
 * known (connection_refused, destination_not_found, dns_timeout ...).
 */
export const PROXY_ERRORS = {
  invalid_request: [400, 'http_request_error'],
  proxy_unknown_param: [400, 'http_request_error'],
  proxy_duplicate_param: [400, 'http_request_error'],
  proxy_bad_param: [400, 'http_request_error'],
  proxy_city_without_country: [400, 'http_request_error'],
  proxy_auth_required: [407, 'http_request_denied'],
  session_refused: [403, 'http_request_denied'],
  session_paused: [403, 'http_request_denied'],
  session_expired: [403, 'http_request_denied'],
  client_disabled: [403, 'http_request_denied'],
  over_cap: [403, 'http_request_denied'],
  destination_forbidden: [403, 'destination_ip_prohibited'],
  location_unavailable: [412, 'destination_unavailable'],
  max_sessions: [429, 'http_request_denied'],
  connection_limit: [429, 'connection_limit_reached'],
  request_header_too_large: [431, 'http_request_error'],
  bad_gateway: [502, 'destination_unavailable'],
  sticky_exit_gone: [503, 'destination_unavailable'],
  proxy_unavailable: [503, 'proxy_internal_error'],
  gateway_timeout: [504, 'connection_timeout'],
} as const;

export type ProxyErrorCode = keyof typeof PROXY_ERRORS;

export const PROXY_ERROR_STATUS = Object.fromEntries(Object.entries(PROXY_ERRORS).map(([k, [status]]) => [k, status])) as { [K in ProxyErrorCode]: (typeof PROXY_ERRORS)[K][0] };

/** The error record of a proxy answer. */
export function proxyErrorBody(code: ProxyErrorCode, message: string, details: Record<string, unknown> = {}): { error: { code: ProxyErrorCode; message: string; details: Record<string, unknown> } } {
  return { error: { code, message, details } };
}
