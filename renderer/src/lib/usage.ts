// Usage history: the ranges a person picks for the charts, the query each one sends
// to GET /v2/usage, and the words and time labels of the buckets. Pure: no React, no platform.
import type { UsageQuery, UsageReport, UsageStepValue } from '../../../common/api-types.ts';

export type RangeKey = '1h' | '24h' | '7d' | '30d' | '90d';

export interface RangeDef {
  key: RangeKey;
  /** The button's words ("Last hour"), also its accessible name. */
  label: string;
  ms: number;
  /** The bucket size asked for: the finest one the server keeps for the whole range within 400 buckets. */
  step: UsageStepValue;
  /**
   * How often the shown range is read again: within seconds while its newest bar is a minute or an
   * hour of a day; less often where a bar is an hour of a week or a whole day, whose newest one
   * hardly moves in 15 s while the read, over every client, grows with the range (a month at 100k
   * sessions: about half a second of server time).
   */
  refreshMs: number;
}

const H = 3_600_000;
const D = 24 * H;

export const RANGES: readonly RangeDef[] = [
  { key: '1h', label: 'Last hour', ms: H, step: 'minute', refreshMs: 15_000 },
  { key: '24h', label: 'Last 24 hours', ms: D, step: 'hour', refreshMs: 15_000 },
  { key: '7d', label: 'Last 7 days', ms: 7 * D, step: 'hour', refreshMs: 60_000 },
  { key: '30d', label: 'Last 30 days', ms: 30 * D, step: 'day', refreshMs: 300_000 },
  { key: '90d', label: 'Last 90 days', ms: 90 * D, step: 'day', refreshMs: 300_000 },
];

export const DEFAULT_RANGE: RangeKey = '24h';

export function rangeDef(key: RangeKey): RangeDef {
  return RANGES.find((r) => r.key === key) ?? RANGES[1]!;
}

/** Which traffic a chart shows: the whole customer, one client or one session. */
export type UsageFilter = { client_id?: string; session_id?: string };

/** The query of a range ending now. */
export function usageQuery(filter: UsageFilter, key: RangeKey, now = Date.now()): UsageQuery {
  const r = rangeDef(key);
  return { ...filter, from: new Date(now - r.ms).toISOString(), to: new Date(now).toISOString(), step: r.step };
}

/** "minute", "hour", "day": for "bytes per minute". */
export function stepWord(step: UsageStepValue): string {
  return step;
}

/** A bucket's start as an axis tick: times within a day, dates beyond (7 days: ticks stand at midnight). */
export function tickLabel(t: number, step: UsageStepValue, key: RangeKey): string {
  const d = new Date(t);
  if (step === 'day') return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
  if (key === '7d') return d.toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric' });
  return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

/** A bucket in full, for the tooltip and the table: "Nov 22, 14:05 – 14:06", or the day. */
export function bucketLabel(t: number, step: UsageStepValue): string {
  const d = new Date(t);
  if (step === 'day') return d.toLocaleDateString(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric' });
  const end = new Date(t + (step === 'minute' ? 60_000 : H));
  const date = d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
  const hm = (x: Date) => x.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return `${date}, ${hm(d)} – ${hm(end)}`;
}

/** The local time zone's name, for "times in Europe/Berlin". */
export function localZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
  } catch {
    return 'local time';
  }
}

export interface ChartPoint {
  t: number;
  up: number;
  down: number;
}

export function chartPoints(report: UsageReport): ChartPoint[] {
  return report.buckets.map((b) => ({ t: Date.parse(b.start), up: b.uploaded_bytes, down: b.downloaded_bytes }));
}

/** The bucket that moved the most bytes (both directions), or null when nothing moved. */
export function busiest(points: ChartPoint[]): ChartPoint | null {
  let best: ChartPoint | null = null;
  for (const p of points) if (p.up + p.down > 0 && (!best || p.up + p.down > best.up + best.down)) best = p;
  return best;
}

const NICE = [0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000];

/**
 * Round ticks for a bytes axis from 0 to at least `max`: at most five steps of 1, 2, 2.5 or 5
 * times a power of ten of the unit the labels use (B, KB, MB, ... at 1024), so the labels read
 * "0 B, 1.00 MB, 2.00 MB, 3.00 MB" rather than "781 KB, 1.53 MB".
 */
export function niceTicks(max: number): number[] {
  if (!(max > 0)) return [0, 1024];
  let unit = 1;
  while (max / unit >= 1024) unit *= 1024;
  const v = max / unit;
  const step = NICE.find((s) => (unit === 1 ? s >= 1 : true) && s * 5 >= v) ?? 1000;
  const count = Math.max(1, Math.ceil(v / step - 1e-9));
  return Array.from({ length: count + 1 }, (_, i) => Math.round(i * step * unit));
}

/**
 * Where the time axis puts its labels: on round local times (every 10 minutes, every 3 hours,
 * each midnight) or every 5th / 14th day counted back from today; undefined lets the chart choose
 * (fewer than two such points).
 */
export function timeTicks(points: ChartPoint[], key: RangeKey): number[] | undefined {
  const pick = (keep: (d: Date, fromEnd: number) => boolean) => points.filter((p, i) => keep(new Date(p.t), points.length - 1 - i)).map((p) => p.t);
  const ticks =
    key === '1h'
      ? pick((d) => d.getMinutes() % 10 === 0)
      : key === '24h'
        ? pick((d) => d.getHours() % 3 === 0)
        : key === '7d'
          ? pick((d) => d.getHours() === 0)
          : pick((_, back) => back % (key === '30d' ? 5 : 14) === 0);
  return ticks.length >= 2 ? ticks : undefined;
}
