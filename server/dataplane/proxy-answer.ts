// The proxy's own answers: every error it gives carries the contract's JSON error record, the
// `X-Proxy-Error: <code>` header (the code of PROXY_ERRORS) and an RFC 9209 `Proxy-Status`
// header (`vpn-access; error=<type>; details="<message>"`), and `Connection: close`. Also: which
// code a refused admission and a failed dial answer with, and where a place's cities are listed.
import { PROXY_ERRORS, PROXY_ERROR_STATUS, proxyErrorBody, type ProxyErrorCode } from '../contract/errors.ts';
import { cityToken } from '../contract/proxy-string.ts';
import type { ZoneInfo } from '../domain.ts';
import type { Refusal } from './admission.ts';
import { EgressRefused } from './egress.ts';

/** Our name as the member of the Proxy-Status list. */
export const PROXY_NAME = 'vpn-access';
/** Announced on the answer (the CONNECT 200 or the destination's head) of a sticky session that moved to another exit. */
export const SESSION_MOVED_HEADER = 'X-Proxy-Session-Moved: 1';

const REASONS: Record<number, string> = {
  400: 'Bad Request', 403: 'Forbidden', 407: 'Proxy Authentication Required', 412: 'Precondition Failed', 429: 'Too Many Requests',
  431: 'Request Header Fields Too Large', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

/** An RFC 8941 sf-string: printable ASCII, `\` and `"` escaped; anything else becomes `?`. */
export function sfString(text: string): string {
  return `"${text.replace(/[^\x20-\x7e]/g, '?').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export interface ErrorOptions {
  /** The JSON record's details. */
  details?: Record<string, unknown>;
  /** A finer RFC 9209 error type than the code's own (a failed dial). */
  proxyError?: string;
  headers?: string[];
}

export function errorResponse(code: ProxyErrorCode, message: string, opts: ErrorOptions = {}): Buffer {
  const status = PROXY_ERROR_STATUS[code];
  const body = JSON.stringify(proxyErrorBody(code, message, opts.details));
  return Buffer.from(
    [
      `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      `Proxy-Status: ${PROXY_NAME}; error=${opts.proxyError ?? PROXY_ERRORS[code][1]}; details=${sfString(message)}`,
      `X-Proxy-Error: ${code}`,
      ...(opts.headers ?? []),
      '',
      body,
    ].join('\r\n'),
  );
}

/** The code a refused admission answers with. */
export function refusalCode(reason: Refusal): ProxyErrorCode {
  switch (reason) {
    case 'paused': return 'session_paused';
    case 'session_cap': case 'client_cap': case 'global_cap': return 'over_cap';
    case 'expired': case 'client_expired': return 'session_expired';
    case 'client_disabled': return 'client_disabled';
    case 'max_sessions': return 'max_sessions';
    case 'too_many_connections': case 'connection_rate': return 'connection_limit';
    case 'unavailable': return 'proxy_unavailable';
    default: return 'session_refused';
  }
}

/**
 * A request failed at its exit, before any destination was dialled: no exit of its place could be
 * reached (502), or a strict sticky key's exit could not and the key may not move (503).
 */
export class ExitFailed extends Error {
  readonly code: 'bad_gateway' | 'sticky_exit_gone';

  constructor(code: ExitFailed['code'], message: string) {
    super(message);
    this.code = code;
  }
}

/** What a failed dial (direct or through a relay) answers: 403 for the egress policy, 504 for a time-out, else 502. */
export function dialFailure(err: Error, host: string, port: number): { code: ProxyErrorCode; proxyError: string; message: string } {
  if (err instanceof ExitFailed) return { code: err.code, proxyError: 'destination_unavailable', message: err.message };
  const where = `${host}:${port}`;
  if (err instanceof EgressRefused) return { code: 'destination_forbidden', proxyError: 'destination_ip_prohibited', message: `${where}: destination not allowed by the egress policy` };
  const errno = (err as NodeJS.ErrnoException).code;
  if (/DNS lookup .* timed out/.test(err.message)) return { code: 'gateway_timeout', proxyError: 'dns_timeout', message: `${host}: the name lookup timed out` };
  if (err.message === 'connect timeout' || /did not answer in time/.test(err.message)) return { code: 'gateway_timeout', proxyError: 'connection_timeout', message: `${where}: the connection timed out` };
  if (errno === 'ENOTFOUND' || errno === 'EAI_AGAIN' || errno === 'ENODATA') return { code: 'bad_gateway', proxyError: 'destination_not_found', message: `${host}: no such host` };
  if (errno === 'ECONNREFUSED') return { code: 'bad_gateway', proxyError: 'connection_refused', message: `${where}: connection refused` };
  if (errno === 'EHOSTUNREACH' || errno === 'ENETUNREACH') return { code: 'bad_gateway', proxyError: 'destination_ip_unroutable', message: `${where}: unreachable` };
  return { code: 'bad_gateway', proxyError: 'destination_unavailable', message: `cannot reach ${where}` };
}

/** The catalogue's cities in a country, as proxy-string tokens, sorted, each once. */
export function citiesIn(zones: ZoneInfo[], country: string): string[] {
  const all = zones.filter((z) => z.country.toUpperCase() === country).flatMap((z) => z.cities.map(cityToken));
  return [...new Set(all)].sort();
}

/** Why a country / city of a proxy string is not served: its 412 answer, or undefined when the catalogue has it. */
export function checkGeo(zones: ZoneInfo[], country?: string, city?: string): { message: string; details: Record<string, unknown> } | undefined {
  if (!country) return undefined;
  const inCountry = zones.filter((z) => z.country.toUpperCase() === country);
  if (inCountry.length === 0) return { message: `country ${country} is not available`, details: { country } };
  if (city && !inCountry.some((z) => z.cities.some((c) => cityToken(c) === city))) {
    const cities = citiesIn(zones, country);
    return { message: `city ${city} is not available in ${country}; available: ${cities.join(', ') || 'none'}`, details: { country, city, available_cities: cities } };
  }
  return undefined;
}
