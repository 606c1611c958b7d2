// The soak's verdict: its figures printed with console.log, and the list of what did not hold
// (empty when everything did), each with its size, so one run shows every failed assertion.
import { availableParallelism, loadavg } from 'node:os';
import type { DataWait, SoakSession, Traffic } from './soak-traffic.ts';

/** One API answer (status 0: refused or no answer within 15 s). */
export interface Answer {
  at: number;
  cp: string;
  what: string;
  status: number;
  ms: number;
}

/**
 * An outage: from the kill to the end of the restart (Infinity while it lasts). `cp`: only that
 * instance's answers are excused; `node`: only data-plane requests through that node; neither:
 * every API answer (PostgreSQL).
 */
export interface Window {
  what: string;
  from: number;
  to: number;
  cp?: string;
  node?: string;
}

export interface SoakInput {
  sessions: SoakSession[];
  counters: Map<string, { up: number; down: number }>;
  kills: string[];
  windows: Window[];
  answers: Answer[];
  traffic: Traffic;
  /** How long after a restart its window still excuses (see the soak's header). */
  marginMs: number;
  followers: { name: string; ids: number[]; connections: number }[];
  truth: number[];
  stale: string[];
  /** When the activity began: answers before it (the setup) are not judged. */
  start: number;
  activityMs: number;
  /** The test process's own largest event-loop delay during the activity (it inflates the waits it measures). */
  loopDelayMaxMs: number;
  quietMs: number;
  /** The nodes killed with -9. */
  victims: string[];
}

const MiB = 1024 * 1024;
/**
 * What a request may wait for its answer (its first byte, for a data-plane request). The soak adds
 * the test process's own largest event-loop delay: a wait is measured by a client on the same
 * cores (this process, or curl and v2ray beside it), and how late the client itself was scheduled
 * is not the server's wait. On a quiet machine that margin is a few milliseconds.
 */
export const MAX_WAIT_MS = 2000;
const mib = (n: number) => `${(n / MiB).toFixed(2)} MiB`;

function overlaps(at: number, ms: number, w: Window, margin: number): boolean {
  return at + ms >= w.from && at <= w.to + margin;
}

/** The first place where `ids` is not strictly increasing, or undefined. */
function disorder(ids: number[]): string | undefined {
  for (let i = 1; i < ids.length; i++) if (ids[i] <= ids[i - 1]) return `id ${ids[i]} after ${ids[i - 1]} (position ${i})`;
  return undefined;
}

export function soakFigures(x: SoakInput): string[] {
  const failures: string[] = [];
  const bound = Math.max(1, x.kills.length) * MiB;

  // Counters against the origins.
  let originUp = 0;
  let originDown = 0;
  let lostVictim = 0;
  let lostOthers = 0;
  let worst = 0;
  const perSession: string[] = [];
  for (const s of x.sessions) {
    const o = s.origin.totals();
    originUp += o.read;
    originDown += o.written;
    const c = x.counters.get(s.id);
    const tag = `session ${s.id.slice(0, 8)} (node ${s.node}, made on ${s.createdOn}, ${s.network} link)`;
    if (!c) {
      failures.push(`${tag}: its counters could not be read`);
      continue;
    }
    const du = o.read - c.up;
    const dd = o.written - c.down;
    const missing = Math.max(0, du) + Math.max(0, dd);
    if (x.victims.includes(s.node)) lostVictim += missing;
    else lostOthers += missing;
    worst = Math.max(worst, Math.abs(du), Math.abs(dd));
    perSession.push(`${s.id.slice(0, 8)}@${s.node} ${(du / 1024).toFixed(0)}/${(dd / 1024).toFixed(0)}`);
    if (Math.abs(du) > bound || Math.abs(dd) > bound) {
      failures.push(
        `${tag}: counters up ${c.up} / down ${c.down}, origin read ${o.read} / wrote ${o.written}: ` +
          `${du >= 0 ? 'missing' : 'extra'} ${mib(Math.abs(du))} up, ${dd >= 0 ? 'missing' : 'extra'} ${mib(Math.abs(dd))} down (bound ${mib(bound)}: 1 MiB per kill)`,
      );
    }
  }

  // Event streams.
  const truthDisorder = disorder(x.truth);
  if (truthDisorder) failures.push(`the replayed event log is out of order: ${truthDisorder}`);
  const truthSet = new Set(x.truth);
  for (const f of x.followers) {
    const bad = disorder(f.ids);
    if (bad) failures.push(`event stream of ${f.name}: not once and in order: ${bad}`);
    const got = new Set(f.ids);
    const missing = x.truth.filter((id) => !got.has(id));
    const extra = f.ids.filter((id) => !truthSet.has(id));
    if (missing.length || extra.length) {
      failures.push(`event stream of ${f.name}: ${missing.length} of ${x.truth.length} ids missing (first ${missing.slice(0, 5).join(', ')}), ${extra.length} not in the log`);
    }
  }

  // Answers and waits outside the outage windows.
  const apiExcused = (a: Answer) => x.windows.some((w) => !w.node && (!w.cp || w.cp === a.cp) && overlaps(a.at, a.ms, w, x.marginMs));
  const dataExcused = (d: DataWait) => x.windows.some((w) => w.node !== undefined && d.nodes.includes(w.node) && overlaps(d.at, d.ms, w, x.marginMs));
  const outside = x.answers.filter((a) => a.at >= x.start && !apiExcused(a));
  const errors500 = outside.filter((a) => a.status >= 500);
  if (errors500.length) failures.push(`${errors500.length} answers were 5xx outside the outage windows: ${errors500.slice(0, 5).map((a) => `${a.cp} ${a.what} ${a.status}`).join('; ')}`);
  const unanswered = outside.filter((a) => a.status === 0);
  if (unanswered.length) failures.push(`${unanswered.length} API requests got no answer (refused, reset or 15 s without one) outside the outage windows: ${unanswered.slice(0, 5).map((a) => `${a.cp} ${a.what}`).join('; ')}`);
  const waitBound = MAX_WAIT_MS + x.loopDelayMaxMs;
  const slow = outside.filter((a) => a.ms > waitBound);
  if (slow.length) failures.push(`${slow.length} API requests waited more than ${waitBound.toFixed(0)} ms (2 s + the client's own delay) outside the outage windows: ${slow.slice(0, 5).map((a) => `${a.cp} ${a.what} ${a.ms.toFixed(0)} ms`).join('; ')}`);
  const dataOutside = x.traffic.dataLatency.filter((d) => d.at >= x.start && !dataExcused(d));
  const slowData = dataOutside.filter((d) => d.ms > waitBound);
  if (slowData.length) failures.push(`${slowData.length} data-plane requests waited more than ${waitBound.toFixed(0)} ms (2 s + the client's own delay) for their first byte: ${slowData.slice(0, 5).map((d) => `via ${d.nodes.join('→')} ${d.ms.toFixed(0)} ms`).join('; ')}`);
  if (x.stale.length) failures.push(`${x.stale.length} sessions still active (or unreadable) ${(x.quietMs / 1000).toFixed(1)} s after every client left: ${x.stale.join('; ')}`);

  const max = (xs: number[]) => (xs.length ? Math.max(...xs) : 0);
  const byClass = (lo: number, hi: number) => x.answers.filter((a) => a.status >= lo && a.status < hi).length;
  console.log(
    [
      `soak figures (${(x.activityMs / 1000).toFixed(0)} s of activity, quiet period ${(x.quietMs / 1000).toFixed(1)} s):`,
      `  sessions ${x.sessions.length} (on ${[...new Set(x.sessions.map((s) => s.node))].sort().join(', ')}; ${x.sessions.filter((s) => s.vlessClient).length} with a v2ray client)`,
      `  API requests ${x.answers.length}: 2xx ${byClass(200, 300)}, 4xx ${byClass(400, 500)}, 5xx ${byClass(500, 600)} (${errors500.length} outside the windows), no answer ${byClass(0, 1)} (${outside.filter((a) => a.status === 0).length} outside)`,
      `  transfers ${x.traffic.transfers} (${x.traffic.failed} cut or refused); origin bytes: uploaded ${mib(originUp)}, downloaded ${mib(originDown)}`,
      `  kills (-9): ${x.kills.join(', ')}; windows: ${x.windows.map((w) => `${w.what} ${Number.isFinite(w.to) ? `${((w.to - w.from) / 1000).toFixed(1)} s` : 'to the end'}`).join(', ')} (+${x.marginMs / 1000} s margin)`,
      `  max wait: API ${max(x.answers.map((a) => a.ms)).toFixed(0)} ms (outside the windows ${max(outside.map((a) => a.ms)).toFixed(0)} ms), data plane first byte ${max(x.traffic.dataLatency.map((d) => d.ms)).toFixed(0)} ms (outside ${max(dataOutside.map((d) => d.ms)).toFixed(0)} ms) | bound ${MAX_WAIT_MS} ms + the test process's own event-loop delay (up to ${x.loopDelayMaxMs.toFixed(0)} ms), load average ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`,
      `  bytes lost: node kills (sessions on ${x.victims.join(', ') || 'none'}) ${mib(lostVictim)}; other sessions (control plane and PostgreSQL kills) ${mib(lostOthers)}; worst session |counters - origin| ${mib(worst)} | bound ${mib(bound)} per session (1 MiB per kill)`,
      `  origin - counters per session (KiB up/down): ${perSession.join(', ')}`,
      `  events ${x.truth.length}; stream connections ${x.followers.map((f) => `${f.name} ${f.connections}`).join(', ')}`,
    ].join('\n'),
  );
  return failures;
}
