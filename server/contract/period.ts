// Periodic byte caps: which period a limits record's caps count in now.
//
// A limits record may carry `reset_period` (none, day, week, month, rolling_30d) and
// `reset_anchor` (a date-time; default 2000-01-01T00:00:00Z, so days turn at midnight UTC and
// weeks on Saturdays at midnight UTC unless anchored otherwise). Fixed periods run from the
// anchor in whole steps (months are calendar months from the anchor's day and time, clamped to
// the month's last day); rolling_30d always counts the last 30 days. `none` (or no field) keeps
// today's meaning: the caps count the lifetime of the session, client or customer.
//
// Part of the limits contract; imports nothing but the domain types, so the data plane, the
// store and the services all use it.
import type { LimitValues } from '../domain.ts';

export const RESET_PERIODS = ['none', 'day', 'week', 'month', 'rolling_30d'] as const;
export type ResetPeriod = (typeof RESET_PERIODS)[number];
export const DEFAULT_ANCHOR = '2000-01-01T00:00:00.000Z';
const DAY = 86_400_000;
export const ROLLING_MS = 30 * DAY;

/** The period a record's caps count in at `now`: [start, end) (end null for the rolling window), or null for lifetime caps. */
export interface Period {
  kind: Exclude<ResetPeriod, 'none'>;
  start: number;
  end: number | null;
}

function addMonths(anchor: Date, months: number): number {
  const y = anchor.getUTCFullYear();
  const m = anchor.getUTCMonth() + months;
  const year = y + Math.floor(m / 12);
  const month = ((m % 12) + 12) % 12;
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(anchor.getUTCDate(), last), anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds());
}

export function periodOf(values: Pick<LimitValues, 'reset_period' | 'reset_anchor'> | undefined, now: number): Period | null {
  const kind = values?.reset_period;
  if (!kind || kind === 'none') return null;
  if (kind === 'rolling_30d') return { kind, start: now - ROLLING_MS, end: null };
  const anchorMs = Date.parse(values?.reset_anchor ?? DEFAULT_ANCHOR);
  const anchor = Number.isFinite(anchorMs) ? anchorMs : Date.parse(DEFAULT_ANCHOR);
  if (kind === 'day' || kind === 'week') {
    const len = kind === 'day' ? DAY : 7 * DAY;
    const start = anchor + Math.floor((now - anchor) / len) * len;
    return { kind, start, end: start + len };
  }
  const a = new Date(anchor);
  const nowDate = new Date(now);
  let k = (nowDate.getUTCFullYear() - a.getUTCFullYear()) * 12 + (nowDate.getUTCMonth() - a.getUTCMonth());
  while (addMonths(a, k) > now) k--;
  while (addMonths(a, k + 1) <= now) k++;
  return { kind, start: addMonths(a, k), end: addMonths(a, k + 1) };
}

/** The key a rolling window's single base is recorded under (one base, rewritten: server/quota/job.ts). */
export const ROLLING_KEY = 0;

/** The key a period's quota base is recorded under: its start, or ROLLING_KEY for the rolling window. */
export const baseKeyOf = (p: Period): number => (p.kind === 'rolling_30d' ? ROLLING_KEY : p.start);

/** Whether the record has a byte cap that renews (a speed cap never needs a period). */
export function isPeriodic(values: LimitValues | undefined): boolean {
  return !!values && !!values.reset_period && values.reset_period !== 'none' && (values.downloaded_bytes !== undefined || values.uploaded_bytes !== undefined);
}
