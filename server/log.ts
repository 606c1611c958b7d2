// A line logger: readable, `2026-11-22T10:04:05.123Z INFO  message key=value`, or one JSON object a
// line (`--log-format json`: {"time","level","msg", ...fields}) for log shippers. Ids are cut and
// tokens redacted in both. Never give it a token or a whole session id (see redactIds / shortId in time.ts).
import type { Logger } from './domain.ts';
import { redactIds } from './time.ts';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function fmt(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value;
  if (value instanceof Error) return JSON.stringify(value.message);
  return JSON.stringify(value);
}

export type LogFormat = 'text' | 'json';

/** A field's value with every string in it redacted (before JSON escapes it: a redaction must never eat an escape). */
function redactDeep(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return redactIds(v);
  if (v instanceof Error) return redactIds(v.message);
  if (depth > 8 || v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => redactDeep(x, depth + 1));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redactDeep(x, depth + 1)]));
}

/** One JSON object: time, level and msg first, then the fields (an Error as its message; a field never replaces those three). */
function jsonLine(time: string, level: Level, msg: string, obj: object | string): string {
  const record: Record<string, unknown> = { time, level, msg: redactIds(msg) };
  if (typeof obj !== 'string') for (const [k, v] of Object.entries(obj)) if (!(k in record)) record[k] = redactDeep(v);
  return JSON.stringify(record);
}

export function createLogger(opts: { level?: Level | 'silent'; format?: LogFormat; write?: (line: string) => void } = {}): Logger {
  const level = opts.level ?? 'info';
  const write = opts.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const emit = (l: Level, obj: object | string, msg?: string) => {
    if (level === 'silent' || ORDER[l] < ORDER[level]) return;
    const text = typeof obj === 'string' ? obj : msg ?? '';
    if (opts.format === 'json') return write(jsonLine(new Date().toISOString(), l, text, obj));
    const fields =
      typeof obj === 'string'
        ? ''
        : Object.entries(obj)
            .map(([k, v]) => ` ${k}=${fmt(v)}`)
            .join('');
    write(redactIds(`${new Date().toISOString()} ${l.toUpperCase().padEnd(5)} ${text}${fields}`));
  };
  return {
    debug: (o, m) => emit('debug', o, m),
    info: (o, m) => emit('info', o, m),
    warn: (o, m) => emit('warn', o, m),
    error: (o, m) => emit('error', o, m),
  };
}

export const silentLogger: Logger = createLogger({ level: 'silent' });

/**
 * For a failure that repeats while it lasts (the database away, a full disk): `line(fields)` is
 * written at most once per `ms`; `fields` holds `alike_since_last_line`, how many calls were left
 * out since the previous line, when there were any.
 */
export function throttledLine(ms: number): (line: (fields: { alike_since_last_line?: number }) => void) => void {
  let at = -Infinity;
  let alike = 0;
  return (line) => {
    const now = Date.now();
    if (now - at < ms) {
      alike++;
      return;
    }
    line(alike ? { alike_since_last_line: alike } : {});
    at = now;
    alike = 0;
  };
}
