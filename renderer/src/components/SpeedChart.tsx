// A small live chart of upload and download speed (SVG, no chart library): the last 60 samples
// (traffic updates and the page's own reads of the session), with the time they span. Its scale
// is a round speed (niceTicks, as the usage charts' axis), with a labelled grid line at each step,
// so a speed reads off the chart at a glance. While none of the samples has moved a byte it says so
// in words instead of drawing an empty box or a flat line.
import { formatDuration, formatSpeed } from '../lib/format.ts';
import { niceTicks } from '../lib/usage.ts';

export function SpeedChart({ samples }: { samples: Array<[number, number, number]> }) {
  const w = 480;
  const h = 120;
  const pts = samples.slice(-60);
  const ticks = niceTicks(Math.max(1024, ...pts.map((p) => Math.max(p[1], p[2]))));
  const max = ticks[ticks.length - 1]!;
  const y = (v: number) => h - (v / max) * (h - 8) - 4;
  const path = (i: 1 | 2) => pts.map((p, k) => `${k ? 'L' : 'M'}${((k / Math.max(1, pts.length - 1)) * w).toFixed(1)},${y(p[i]).toFixed(1)}`).join(' ');
  const last = pts[pts.length - 1];
  const spanSec = pts.length > 1 ? Math.round((last[0] - pts[0][0]) / 1000) : 0;
  const quiet = pts.every((p) => !p[1] && !p[2]);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`Speed chart. Upload ${formatSpeed(last?.[1] ?? 0)}, download ${formatSpeed(last?.[2] ?? 0)}.`} preserveAspectRatio="none">
        <line x1="0" x2={w} y1={h - 4} y2={h - 4} className="chart-axis" />
        {quiet ? null : ticks.slice(1).map((t) => <line key={t} x1="0" x2={w} y1={y(t)} y2={y(t)} className="chart-grid" />)}
        {pts.length > 1 && !quiet ? (
          <>
            <path d={path(2)} className="chart-down" />
            <path d={path(1)} className="chart-up" />
          </>
        ) : null}
      </svg>
      {quiet ? null : (
        <div className="chart-ticks" aria-hidden="true">
          {ticks.slice(1).map((t) => (
            <span key={t} style={{ top: `${(y(t) / h) * 100}%` }}>
              {formatSpeed(t)}
            </span>
          ))}
        </div>
      )}
      {quiet ? <p className="chart-empty muted small">No traffic since this page opened: the chart fills as the session moves data.</p> : null}
      <figcaption>
        <span className="legend legend-down">Download {formatSpeed(last?.[2] ?? 0)}</span>
        <span className="legend legend-up">Upload {formatSpeed(last?.[1] ?? 0)}</span>
        {spanSec > 0 ? <span className="muted">last {formatDuration(spanSec)}</span> : null}
      </figcaption>
    </figure>
  );
}
