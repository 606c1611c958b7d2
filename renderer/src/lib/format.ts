// Human-readable numbers: bytes, speeds, durations; and parsing of "1.5 GB" back to integers.
const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'] as const;

export function formatBytes(n: number | undefined | null): string {
  if (n === undefined || n === null || !Number.isFinite(n)) return '—';
  if (n < 1024) return `${n} B`;
  let v = n;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${UNITS[i]}`;
}

export function formatSpeed(bps: number | undefined | null): string {
  if (bps === undefined || bps === null || !Number.isFinite(bps)) return '—';
  return `${formatBytes(Math.round(bps))}/s`;
}

export function formatDuration(s: number | undefined | null): string {
  if (s === undefined || s === null || !Number.isFinite(s)) return '—';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = Math.floor(s % 60);
  if (h) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m) return `${m}m ${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

export function formatTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString();
}

export function formatDateTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** A short date and time for badges: "Nov 28, 00:00" (the year only when it is not this one). */
export function formatShortDateTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const year = d.getFullYear() !== new Date().getFullYear() ? { year: 'numeric' as const } : {};
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', ...year });
}

const MULT: Record<string, number> = { b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1024 ** 4, tib: 1024 ** 4 };

/**
 * Parses what a person types into a bytes or speed field: "1048576", "512 KB", "1.5 GB",
 * "100 KB/s". Units are binary (1 KB = 1024 bytes). Returns null for empty, NaN for nonsense.
 */
export function parseAmount(text: string): number | null {
  const t = text.trim().toLowerCase().replace(/\/s$/, '').replace(/,/g, '').trim();
  if (!t) return null;
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/.exec(t);
  if (!m) return Number.NaN;
  const unit = m[2] || 'b';
  const mult = MULT[unit];
  if (!mult) return Number.NaN;
  const v = Number(m[1]) * mult;
  return Number.isFinite(v) ? Math.round(v) : Number.NaN;
}
