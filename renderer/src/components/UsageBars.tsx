// The bars of a usage chart (recharts), in a file of their own: UsageChart.tsx loads it with
// React.lazy, so recharts and its d3 parts (about half the renderer's code) are fetched only when a
// chart is first drawn, not before the window's first paint. Upload is hatched and download solid,
// so the two differ without colour; colours come from the theme's CSS variables (styles.css).
import { useId } from 'react';
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis, type TooltipContentProps } from 'recharts';
import type { NameType, ValueType } from 'recharts/types/component/DefaultTooltipContent';
import type { UsageReport } from '../../../common/api-types.ts';
import { formatBytes } from '../lib/format.ts';
import { bucketLabel, niceTicks, tickLabel, timeTicks, type ChartPoint, type RangeKey } from '../lib/usage.ts';

function UsageTooltip({ active, payload, step }: { active?: boolean; payload?: ReadonlyArray<{ payload?: unknown }>; step: UsageReport['step'] }) {
  const p = active ? (payload?.[0]?.payload as ChartPoint | undefined) : undefined;
  if (!p) return null;
  return (
    <div className="usage-tooltip">
      <p className="usage-tooltip-time">{bucketLabel(p.t, step)}</p>
      <p>
        <span className="swatch swatch-down" aria-hidden="true" /> ↓ Download <strong>{formatBytes(p.down)}</strong>
      </p>
      <p>
        <span className="swatch swatch-up" aria-hidden="true" /> ↑ Upload <strong>{formatBytes(p.up)}</strong>
      </p>
    </div>
  );
}

/** The bars of one answer (never empty: the caller shows the empty state when nothing moved). */
export default function UsageBars({ points, report, range, describedBy }: { points: ChartPoint[]; report: UsageReport; range: RangeKey; describedBy: string }) {
  const ids = useId().replace(/[^A-Za-z0-9]/g, '');
  // The bars stand side by side, so the axis reaches the largest single value.
  const ticks = niceTicks(Math.max(0, ...points.map((p) => Math.max(p.up, p.down))));
  return (
    <div className="usage-plot" aria-describedby={describedBy}>
      <ResponsiveContainer width="100%" height={240}>
        <BarChart data={points} margin={{ top: 8, right: 8, bottom: 4, left: 8 }} barGap={1} barCategoryGap="12%">
          <defs>
            <pattern id={`${ids}-up`} patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">
              <rect width="6" height="6" className="usage-up-bg" />
              <line x1="0" y1="0" x2="0" y2="6" className="usage-up-line" strokeWidth="3" />
            </pattern>
          </defs>
          <CartesianGrid vertical={false} className="usage-grid" />
          <XAxis
            dataKey="t"
            tickFormatter={(t: number) => tickLabel(t, report.step, range)}
            ticks={timeTicks(points, range)}
            interval="preserveStartEnd"
            minTickGap={16}
            tickLine={false}
            className="usage-axis"
          />
          <YAxis
            tickFormatter={(v: number) => formatBytes(v)}
            ticks={ticks}
            domain={[0, ticks[ticks.length - 1]!]}
            interval={0}
            width={72}
            allowDecimals={false}
            className="usage-axis"
            label={{ value: `per ${report.step}`, angle: -90, position: 'insideLeft', offset: -2, className: 'usage-axis-label' }}
          />
          <Tooltip cursor={{ className: 'usage-cursor' }} content={(p: TooltipContentProps<ValueType, NameType>) => <UsageTooltip active={p.active} payload={p.payload} step={report.step} />} isAnimationActive={false} />
          <Bar dataKey="down" name="Download" className="usage-bar-down" isAnimationActive={false} />
          <Bar dataKey="up" name="Upload" fill={`url(#${ids}-up)`} className="usage-bar-up" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}
