// A readable line logger: `2026-11-22T10:04:05.123Z INFO  message key=value`.
// Never give it a token or a whole session id (see redactIds / shortId in time.ts).
import type { Logger } from './domain.ts';
import { redactIds } from './time.ts';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function fmt(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value;
  if (value instanceof Error) return JSON.stringify(value.message);
  return JSON.stringify(value);
}

export function createLogger(opts: { level?: Level | 'silent'; write?: (line: string) => void } = {}): Logger {
  const level = opts.level ?? 'info';
  const write = opts.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const emit = (l: Level, obj: object | string, msg?: string) => {
    if (level === 'silent' || ORDER[l] < ORDER[level]) return;
    const text = typeof obj === 'string' ? obj : msg ?? '';
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
