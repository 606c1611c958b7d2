// What `vpn-access doctor` and GET /v2/doctor answer: checks, each pass, warn or fail with a
// one-line finding and the fix in words, and the count of each. Every probe is bounded in time.

export type CheckStatus = 'pass' | 'warn' | 'fail';

export interface Check {
  /** Stable id for scripts, such as `port-api` or `tls-pin`. */
  id: string;
  title: string;
  status: CheckStatus;
  /** One line: what was found. */
  detail: string;
  /** What to do, in words; empty for a pass. */
  fix: string;
}

export interface DoctorReport {
  checks: Check[];
  summary: Record<CheckStatus, number>;
}

/** Every socket, DNS look-up and query of the doctor gives up after this long. */
export const PROBE_TIMEOUT_MS = 2_000;

export const pass = (id: string, title: string, detail: string): Check => ({ id, title, status: 'pass', detail, fix: '' });
export const warn = (id: string, title: string, detail: string, fix: string): Check => ({ id, title, status: 'warn', detail, fix });
export const fail = (id: string, title: string, detail: string, fix: string): Check => ({ id, title, status: 'fail', detail, fix });

export function report(checks: Check[]): DoctorReport {
  const summary = { pass: 0, warn: 0, fail: 0 };
  for (const c of checks) summary[c.status]++;
  return { checks, summary };
}

/** The worse of two statuses. */
export function worst(a: CheckStatus, b: CheckStatus): CheckStatus {
  const rank = { pass: 0, warn: 1, fail: 2 };
  return rank[a] >= rank[b] ? a : b;
}

/** `promise`, or a rejection naming `what` once `ms` have passed. */
export function within<T>(promise: Promise<T>, what: string, ms = PROBE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** An error in words: its code when the message lacks it, and the cause a wrapper hides. */
export const messageOf = (err: unknown): string => {
  const e = err as NodeJS.ErrnoException & { cause?: unknown };
  let text = err instanceof Error ? err.message : String(err);
  if (e?.code && /^E[A-Z]+$/.test(e.code) && !text.includes(e.code)) text = `${e.code}: ${text}`;
  if (e?.cause && e.cause !== err) text += ` (${messageOf(e.cause)})`;
  return text || (e?.code ?? 'unknown error');
};

/** The people's form: a mark and words per check, the fix indented under warns and fails, a summary. */
export function formatReport(r: DoctorReport): string {
  const mark = { pass: '[ ok ]', warn: '[warn]', fail: '[FAIL]' };
  const lines: string[] = [];
  for (const c of r.checks) {
    lines.push(`${mark[c.status]} ${c.title}: ${c.detail}`);
    if (c.status !== 'pass' && c.fix) lines.push(`       fix: ${c.fix}`);
  }
  const s = r.summary;
  lines.push('', `${s.pass} passed, ${s.warn} warning${s.warn === 1 ? '' : 's'}, ${s.fail} failed` +
    (s.fail ? ': clients will fail until the failures are fixed' : s.warn ? ': clients can connect; read the warnings' : ': nothing found that stops clients'));
  return `${lines.join('\n')}\n`;
}
