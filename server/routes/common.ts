import type { TSchema } from 'typebox';
import { ErrorRecord } from '../contract/schemas.ts';

/** Response schemas: the success shape plus the error record for each listed status. */
export function responses(success: Record<number, TSchema | { type: 'null' }>, ...errorStatuses: number[]) {
  const out: Record<number, unknown> = { ...success };
  for (const s of errorStatuses) out[s] = ErrorRecord;
  return out;
}

export const bearer = [{ bearerAuth: [] }];
