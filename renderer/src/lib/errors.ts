// Turns API error records into sentences a person can act on.
import type { ApiErrorInfo } from '../../../common/result.ts';

function fieldList(details: Record<string, unknown>): string {
  const names = new Set<string>();
  for (const key of ['fields', 'field', 'unknown_fields', 'properties']) {
    const v = details[key];
    if (typeof v === 'string') names.add(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string') names.add(x);
      else if (x && typeof x === 'object' && 'field' in x) names.add(String((x as { field: unknown }).field));
  }
  return [...names].map((n) => n.replace(/^\//, '').replace(/_/g, ' ')).join(', ');
}

export function humanError(e: ApiErrorInfo | null | undefined): string {
  if (!e) return '';
  switch (e.code) {
    case 'network_error':
      return 'The server could not be reached. Check that it is running, then try again.';
    case 'unauthorized':
      return 'The API token was not accepted. Enter a valid token.';
    case 'forbidden':
      // The server names what an owner token is needed for (limits, webhooks, clients...) when it is a kind of thing.
      return typeof e.details.resource === 'string'
        ? `This token is not allowed to do that: ${e.details.resource} can only be managed with an owner token.`
        : 'This token is not allowed to do that: it needs an owner token.';
    case 'rate_limited':
      return `Too many requests in a short time. The server asks to wait${e.retryAfter ? ` ${e.retryAfter} seconds` : ' a moment'} before trying again.`;
    case 'zone_not_found':
      return 'That zone does not exist. Reload the zone list and pick another one.';
    case 'zone_unavailable':
      return 'That zone has no active nodes right now. Pick a zone that has active nodes.';
    case 'unsupported_connection_type':
      return 'Only VLESS connections are supported.';
    case 'session_not_found':
      return 'This session does not exist, or belongs to another customer.';
    case 'session_not_reusable':
      return 'Only reusable sessions can be paused and resumed.';
    case 'session_already_paused':
      return 'This session is already paused.';
    case 'session_not_paused':
      return 'This session is not paused, so there is nothing to resume.';
    case 'session_ended':
      return 'This session has ended; it can no longer be paused or resumed.';
    case 'limits_not_found':
      return 'No limits are set here.';
    case 'payload_too_large':
      return 'The request was too large.';
    case 'internal_error':
      return 'The server hit an unexpected error. Try again; if it keeps happening, check the server log.';
    case 'invalid_request': {
      const fields = fieldList(e.details ?? {});
      return fields ? `Please check ${fields}: ${e.message}` : `The request was not accepted: ${e.message}`;
    }
    default:
      if (e.status === 0) return e.message || 'Something went wrong on this computer.';
      return e.message || `The server answered ${e.status}.`;
  }
}
