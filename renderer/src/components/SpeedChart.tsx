// A small live chart of upload and download speed (SVG, no chart library): the last 60 samples
// (traffic updates and the page's own reads of the session), with the time they span. While none
// of them has moved a byte it says so in words instead of drawing an empty box or a flat line.
import { formatDuration, formatSpeed } from '../lib/format.ts';

export function SpeedChart({ samples }: { samples: Array<[number, number, number]> }) {
  const w = 480;
  const h = 120;
  const pts = samples.slice(-60);
  const max = Math.max(1024, ...pts.map((p) => Math.max(p[1], p[2])));
  const path = (i: 1 | 2) =>
    pts.map((p, k) => `${k ? 'L' : 'M'}${((k / Math.max(1, pts.length - 1)) * w).toFixed(1)},${(h - (p[i] / max) * (h - 8) - 4).toFixed(1)}`).join(' ');
  const last = pts[pts.length - 1];
  const spanSec = pts.length > 1 ? Math.round((last[0] - pts[0][0]) / 1000) : 0;
  const quiet = pts.every((p) => !p[1] && !p[2]);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`Speed chart. Upload ${formatSpeed(last?.[1] ?? 0)}, download ${formatSpeed(last?.[2] ?? 0)}.`} preserveAspectRatio="none">
        <line x1="0" x2={w} y1={h - 4} y2={h - 4} className="chart-axis" />
        {pts.length > 1 && !quiet ? (
          <>
            <path d={path(2)} className="chart-down" />
            <path d={path(1)} className="chart-up" />
          </>
        ) : null}
      </svg>
      {quiet ? <p className="chart-empty muted small">No traffic since this page opened: the chart fills as the session moves data.</p> : null}
      <figcaption>
        <span className="legend legend-down">Download {formatSpeed(last?.[2] ?? 0)}</span>
        <span className="legend legend-up">Upload {formatSpeed(last?.[1] ?? 0)}</span>
        <span className="muted">scale {formatSpeed(max)}</span>
        {spanSec > 0 ? <span className="muted">last {formatDuration(spanSec)}</span> : null}
      </figcaption>
    </figure>
  );
}
