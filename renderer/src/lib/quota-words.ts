// Warnings before a client is cut, in words, from the client record the API already gives
// (GET /v2/clients/{id}: `limits` in force and the current `period`'s usage; lifetime totals when
// the caps do not renew): "alice has used 80 % of the monthly download cap (8.0 GB of 10 GB)".
// The server sends the same thresholds as the usage_threshold webhook (50, 80, 100 %).
import type { Client } from '../../../common/client-types.ts';
import { formatDateTime } from './format.ts';

export interface QuotaWarning {
  direction: 'download' | 'upload';
  /** The highest threshold reached: 50, 80 or 100. */
  threshold: 50 | 80 | 100;
  percent: number;
  text: string;
}

const PERIOD_WORD: Record<string, string> = { day: 'daily', week: 'weekly', month: 'monthly', rolling_30d: '30-day' };
const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

/** "8.0 GB"; `trim`: "10 GB" rather than "10.0 GB". */
export function quotaAmount(n: number, trim = false): string {
  let v = n;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  const text = i === 0 ? String(v) : v.toFixed(1);
  return `${trim ? text.replace(/\.0$/, '') : text} ${UNITS[i]}`;
}

/** The warnings of a client at 50 % or more of a byte cap in force, download first. */
export function quotaWarnings(c: Pick<Client, 'client_id' | 'limits' | 'period' | 'downloaded_bytes' | 'uploaded_bytes' | 'over_quota_until'>): QuotaWarning[] {
  const limits = c.limits as { downloaded_bytes?: number; uploaded_bytes?: number; reset_period?: string };
  const renews = limits.reset_period && limits.reset_period !== 'none' ? PERIOD_WORD[limits.reset_period] : undefined;
  const out: QuotaWarning[] = [];
  for (const direction of ['download', 'upload'] as const) {
    const cap = direction === 'download' ? limits.downloaded_bytes : limits.uploaded_bytes;
    if (cap === undefined || cap <= 0) continue;
    const used = c.period ? (direction === 'download' ? c.period.downloaded_bytes : c.period.uploaded_bytes) : direction === 'download' ? c.downloaded_bytes : c.uploaded_bytes;
    const percent = Math.floor((used * 100) / cap);
    if (percent < 50) continue;
    const threshold = percent >= 100 ? 100 : percent >= 80 ? 80 : 50;
    const capName = `${renews ? `${renews} ` : ''}${direction} cap`;
    const figures = `(${quotaAmount(Math.min(used, cap))} of ${quotaAmount(cap, true)})`;
    const text =
      threshold === 100
        ? `${c.client_id} has used all of the ${capName} ${figures}: new connections are refused${c.over_quota_until ? ` until ${formatDateTime(c.over_quota_until)}` : ' until the cap is raised'}.`
        : `${c.client_id} has used ${percent} % of the ${capName} ${figures}.`;
    out.push({ direction, threshold, percent, text });
  }
  return out;
}
