// Usage history charts: the range picker, the loading of GET /v2/usage (the store's
// loadUsage, through the platform: IPC in the desktop app, fetch in web mode), and the chart
// with its summary in words and a table of the buckets for people who do not see the chart. The
// bars themselves (recharts) are in UsageBars.tsx, loaded on first use.
import { lazy, Suspense, useCallback, useEffect, useId, useRef, useState } from 'react';
import type { UsageReport } from '../../../common/api-types.ts';
import type { ApiErrorInfo } from '../../../common/result.ts';
import { humanError } from '../lib/errors.ts';
import { formatBytes } from '../lib/format.ts';
import { DEFAULT_RANGE, bucketLabel, busiest, chartPoints, localZone, rangeDef, RANGES, usageQuery, type ChartPoint, type RangeKey, type UsageFilter } from '../lib/usage.ts';
import { loadUsage, toApiError } from '../store/index.ts';
import { Spinner } from './ui.tsx';

const UsageBars = lazy(() => import('./UsageBars.tsx'));

export interface UsageState {
  /** The answer for `range`, or null while the first answer for it is awaited or failed. */
  report: UsageReport | null;
  loading: boolean;
  error: ApiErrorInfo | null;
  retry(): void;
}

/**
 * GET /v2/usage for a filter and range; again while it is on screen (the newest bucket fills as
 * traffic moves: every 15 s up to a day, less often for longer ranges, RangeDef.refreshMs) and on
 * retry. A range change shows loading, never the old range's bars.
 */
export function useUsage(filter: UsageFilter, range: RangeKey): UsageState {
  const [state, setState] = useState<{ key: string; report: UsageReport | null; error: ApiErrorInfo | null; loading: boolean }>({ key: '', report: null, error: null, loading: true });
  const [attempt, setAttempt] = useState(0);
  const key = `${filter.client_id ?? ''}|${filter.session_id ?? ''}|${range}`;
  useEffect(() => {
    let live = true;
    const load = async () => {
      setState((s) => (s.key === key ? { ...s, loading: true } : { key, report: null, error: null, loading: true }));
      try {
        const report = await loadUsage(usageQuery(filter, range));
        if (live) setState({ key, report, error: null, loading: false });
      } catch (e) {
        // A failed refresh keeps the bars it had; the error is said above them.
        if (live) setState((s) => ({ key, report: s.key === key ? s.report : null, error: toApiError(e), loading: false }));
      }
    };
    void load();
    const t = setInterval(() => void load(), rangeDef(range).refreshMs);
    return () => {
      live = false;
      clearInterval(t);
    };
    // filter is read through key (its parts) so a new object with the same ids does not reload.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, attempt]);
  const retry = useCallback(() => setAttempt((n) => n + 1), []);
  const current = state.key === key;
  return { report: current ? state.report : null, loading: !current || state.loading, error: current ? state.error : null, retry };
}

/** The range choice: radio buttons (arrow keys move between them, as for any radio group). */
export function RangePicker({ value, onChange, label = 'Range' }: { value: RangeKey; onChange: (r: RangeKey) => void; label?: string }) {
  const name = `range-${useId().replace(/[^A-Za-z0-9]/g, '')}`;
  return (
    <fieldset className="range-picker">
      <legend className="sr-only">{label}</legend>
      {RANGES.map((r) => (
        <label key={r.key} className="range-option">
          <input type="radio" name={name} value={r.key} checked={value === r.key} onChange={() => onChange(r.key)} />
          <span>{r.label}</span>
        </label>
      ))}
    </fieldset>
  );
}

/** The table alternative: every bucket that moved bytes, oldest first. */
function BucketTable({ points, report, caption }: { points: ChartPoint[]; report: UsageReport; caption: string }) {
  const rows = points.filter((p) => p.up + p.down > 0);
  return (
    <details className="usage-table">
      <summary>Show the numbers as a table</summary>
      <table className="events" aria-label={caption}>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">{report.step === 'day' ? 'Day' : 'Time'}</th>
            <th scope="col" className="c-num">↑ Uploaded</th>
            <th scope="col" className="c-num">↓ Downloaded</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((p) => (
            <tr key={p.t}>
              <td data-label={report.step === 'day' ? 'Day' : 'Time'}>{bucketLabel(p.t, report.step)}</td>
              <td className="c-num" data-label="↑ Uploaded" data-value={p.up}>{formatBytes(p.up)}</td>
              <td className="c-num" data-label="↓ Downloaded" data-value={p.down}>{formatBytes(p.down)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="help">
        {points.length - rows.length} of {points.length} {report.step} buckets without traffic are left out.
      </p>
    </details>
  );
}

/** The chart of one answer with its legend, summary, empty state and table, or the loading and error states. */
export function UsageView({ usage, range, subject }: { usage: UsageState; range: RangeKey; subject: string }) {
  const summaryId = useId();
  const r = rangeDef(range);
  const { report, error } = usage;
  if (!report) {
    if (error)
      return (
        <div className="usage-state" role="alert">
          <p className="empty-title">The usage could not be loaded</p>
          <p>{humanError(error)}</p>
          <button type="button" className="btn" onClick={usage.retry}>
            Try again
          </button>
        </div>
      );
    return (
      <div className="usage-state">
        <Spinner label={`Loading the usage of the ${r.label.toLowerCase()}…`} />
      </div>
    );
  }
  const points = chartPoints(report);
  const { uploaded_bytes: up, downloaded_bytes: down } = report.totals;
  const peak = busiest(points);
  const Subject = subject.charAt(0).toUpperCase() + subject.slice(1);
  const summary =
    up + down === 0
      ? `No traffic of ${subject} in the ${r.label.toLowerCase()}.`
      : `${Subject}, ${r.label.toLowerCase()}: downloaded ${formatBytes(down)} and uploaded ${formatBytes(up)}, in ${report.step} buckets. ` +
        (peak ? `Busiest ${report.step}: ${bucketLabel(peak.t, report.step)} with ${formatBytes(peak.up + peak.down)}.` : '');
  return (
    <figure className="usage-figure" data-testid="usage-chart" data-range={range} data-step={report.step} data-uploaded={up} data-downloaded={down}>
      {error ? (
        <p className="usage-stale" role="status">
          Could not refresh: {humanError(error)} The bars show the last answer.
        </p>
      ) : null}
      {up + down === 0 ? (
        <div className="usage-state usage-empty">
          <p className="empty-title">No traffic in this range</p>
          <p className="muted">Nothing was uploaded or downloaded by {subject} in the {r.label.toLowerCase()}. Pick a longer range, or connect a client.</p>
        </div>
      ) : (
        <>
          <div className="usage-legend" aria-hidden="true">
            <span>
              <span className="swatch swatch-down" /> ↓ Download {formatBytes(down)}
            </span>
            <span>
              <span className="swatch swatch-up" /> ↑ Upload {formatBytes(up)}
            </span>
            <span className="muted">Bytes per {report.step} · times in {localZone()}</span>
          </div>
          <Suspense
            fallback={
              <div className="usage-plot usage-plot-loading">
                <Spinner label="Drawing the chart…" />
              </div>
            }
          >
            <UsageBars points={points} report={report} range={range} describedBy={summaryId} />
          </Suspense>
        </>
      )}
      <figcaption id={summaryId} className="usage-summary">
        {summary}
      </figcaption>
      {up + down > 0 ? <BucketTable points={points} report={report} caption={`Usage of ${subject} per ${report.step}, ${r.label.toLowerCase()}`} /> : null}
    </figure>
  );
}

/** A card with the range picker and the chart of one client's or one session's traffic. */
export function UsagePanel({ filter, subject, title = 'Usage' }: { filter: UsageFilter; subject: string; title?: string }) {
  const [range, setRange] = useRangeChoice();
  const usage = useUsage(filter, range);
  const headingId = useId();
  return (
    <section className="card usage-card" aria-labelledby={headingId}>
      <div className="usage-head">
        <h2 id={headingId}>{title}</h2>
        {usage.loading && usage.report ? <Spinner label="Refreshing…" /> : null}
        <span className="grow" />
        <RangePicker value={range} onChange={setRange} label={`Range of the ${title.toLowerCase()} chart`} />
      </div>
      <UsageView usage={usage} range={range} subject={subject} />
    </section>
  );
}

const RANGE_KEY = 'vpn-access.usage-range';

/** The range last picked, kept in this window (every chart opens on it). */
export function useRangeChoice(): [RangeKey, (r: RangeKey) => void] {
  const read = (): RangeKey => {
    try {
      const v = sessionStorage.getItem(RANGE_KEY);
      if (v && RANGES.some((r) => r.key === v)) return v as RangeKey;
    } catch {
      /* storage unavailable */
    }
    return DEFAULT_RANGE;
  };
  const [range, setRange] = useState<RangeKey>(read);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    try {
      sessionStorage.setItem(RANGE_KEY, range);
    } catch {
      /* storage unavailable */
    }
  }, [range]);
  return [range, setRange];
}
