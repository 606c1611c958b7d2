// Clients (extension): the one rule of what holds for a client, shared by the control plane,
// the data planes (serve's own and the nodes') and the status views:
//  - the client limits in force: the client's override field by field, else the template's;
//  - where its byte caps count from: the period's recorded base, moved up to its last usage
//    reset when that reset falls in the current period (a lifetime cap counts from the reset);
//  - whether it may connect at all: not disabled, not past its expires_at.
// Imports nothing but the domain types, like period.ts.
import type { ClientControl, LimitValues } from '../domain.ts';
import type { Period } from './period.ts';

export type LimitSource = 'override' | 'template';

/** The limits in force for a client, and for each field whether the override or the template sets it. */
export function clientLimitsInForce(template: LimitValues | undefined | null, override: LimitValues | undefined | null): { limits: LimitValues; sources: Record<string, LimitSource> } {
  const limits: Record<string, unknown> = {};
  const sources: Record<string, LimitSource> = {};
  for (const [k, v] of Object.entries(template ?? {})) {
    if (v === undefined || v === null) continue;
    limits[k] = v;
    sources[k] = 'template';
  }
  for (const [k, v] of Object.entries(override ?? {})) {
    if (v === undefined || v === null) continue;
    limits[k] = v;
    sources[k] = 'override';
  }
  return { limits: limits as LimitValues, sources };
}

/** The client limits in force only (the data planes' hot path: no copy without an override). */
export function mergeClientLimits(template: LimitValues | undefined, control: ClientControl | undefined): LimitValues | undefined {
  if (!control || Object.keys(control.limits).length === 0) return template;
  return clientLimitsInForce(template, control.limits).limits;
}

/**
 * Where a client's caps count from: `base` is the period's base (undefined for lifetime caps);
 * a usage reset inside the current period (or any reset, for lifetime caps) moves it up to the
 * client's totals at the reset.
 */
export function withUsageReset(base: { up: number; down: number }, period: Pick<Period, 'start'> | null, reset: ClientControl['reset']): { up: number; down: number } {
  if (!reset || (period && reset.at < period.start)) return base;
  return { up: Math.max(base.up, reset.up), down: Math.max(base.down, reset.down) };
}

/** Why a client may not connect now: disabled, or past its expires_at; undefined when it may. */
export function clientBlock(control: Pick<ClientControl, 'disabled' | 'expires_at'> | undefined, now: number): 'client_disabled' | 'client_expired' | undefined {
  if (!control) return undefined;
  if (control.disabled) return 'client_disabled';
  if (control.expires_at && Date.parse(control.expires_at) <= now) return 'client_expired';
  return undefined;
}
