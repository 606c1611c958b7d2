// Times in words, relative to now: "3 minutes ago", "in 40 seconds". Pure (the caller gives `now`),
// so a screen that ticks re-renders them and a test pins them.

/** A length of time in words, rounded to its largest unit: "1 second", "12 minutes", "3 hours", "2 days". */
export function spanWords(ms: number): string {
  const s = Math.max(1, Math.round(Math.abs(ms) / 1000));
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (s < 60) return unit(s, 'second');
  const m = Math.round(s / 60);
  if (m < 60) return unit(m, 'minute');
  const h = Math.round(m / 60);
  if (h < 24) return unit(h, 'hour');
  return unit(Math.round(h / 24), 'day');
}

/** "just now" (under 5 s), or "12 minutes ago"; a time slightly ahead of this clock reads "just now". */
export function timeAgo(iso: string, now: number): string {
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  return ms < 5000 ? 'just now' : `${spanWords(ms)} ago`;
}

/** "in 40 seconds" for a time in the future; null for one that has passed (never "in the past"). */
export function timeUntil(iso: string, now: number): string | null {
  const ms = Date.parse(iso) - now;
  if (!Number.isFinite(ms) || ms <= 0) return null;
  return `in ${spanWords(ms)}`;
}
