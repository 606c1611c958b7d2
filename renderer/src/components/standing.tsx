// Status at a glance: badges in words and the usage bar against the byte cap in force
// (lib/standing.ts decides what they say).
import { formatBytes } from '../lib/format.ts';
import type { Badge, Usage } from '../lib/standing.ts';

export function Badges({ badges }: { badges: Badge[] }) {
  return (
    <span className="badges">
      {badges.map((b) => (
        <span key={b.key} className={`badge badge-${b.key === 'status' ? b.text : b.key} tone-${b.tone}`} data-badge={b.key} title={b.text}>
          {b.text}
        </span>
      ))}
    </span>
  );
}

/** A meter of the usage against the cap, its words beside it (or "no byte cap"). */
export function UsageBar({ usage, label, compact }: { usage: Usage | null; label: string; compact?: boolean }) {
  if (!usage) return <span className="muted small">no byte cap</span>;
  const pct = Math.round(usage.fraction * 100);
  const tone = usage.fraction >= 1 ? 'danger' : usage.fraction >= 0.8 ? 'warn' : 'ok';
  return (
    <span className={compact ? 'usage usage-compact' : 'usage'}>
      <span
        className={`usage-track tone-${tone}`}
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct}
        aria-valuetext={`${pct}%: ${usage.words}`}
        title={usage.words}
      >
        <span className="usage-fill" style={{ width: `${pct}%` }} />
      </span>
      <span className="usage-words small">{compact ? `${pct}% of ${formatBytes(usage.cap)}` : usage.words}</span>
    </span>
  );
}
