import type { TSchema } from 'typebox';
import { ApiError } from '../contract/errors.ts';
import { ErrorRecord } from '../contract/schemas.ts';

/** Response schemas: the success shape plus the error record for each listed status. */
export function responses(success: Record<number, TSchema | { type: 'null' }>, ...errorStatuses: number[]) {
  const out: Record<number, unknown> = { ...success };
  for (const s of errorStatuses) out[s] = ErrorRecord;
  return out;
}

export const bearer = [{ bearerAuth: [] }];

/** Operations that take no payload (pause, resume, subscription PUT): none, `{}` or `null` is fine; any field is unknown (400). */
export function noBody(body: unknown): void {
  if (body === undefined || body === null) return;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError('invalid_request', 'Invalid request: this operation takes no body (send none, or {}).', {
      location: 'body',
      fields: [{ field: 'body', problem: 'must be empty' }],
    });
  }
  const unknown = Object.keys(body);
  if (unknown.length) {
    throw new ApiError('invalid_request', `Invalid request: unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`, {
      location: 'body',
      unknown_fields: unknown,
    });
  }
}
