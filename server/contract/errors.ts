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
  payload_too_large: 413,
  unsupported_media_type: 415,
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
 */
export const PROXY_ERROR_STATUS = {
  invalid_request: 400,
  proxy_auth_required: 407,
  location_unavailable: 412,
  session_refused: 403,
  destination_forbidden: 403,
  request_header_too_large: 431,
  bad_gateway: 502,
} as const;

export type ProxyErrorCode = keyof typeof PROXY_ERROR_STATUS;

/** The error record of a proxy answer. */
export function proxyErrorBody(code: ProxyErrorCode, message: string): { error: { code: ProxyErrorCode; message: string; details: Record<string, never> } } {
  return { error: { code, message, details: {} } };
}
