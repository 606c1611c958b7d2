// The Client record of the API (contract/clients.ts) from what the store holds: the client's
// row (what the owner set), what its sessions add up to, the client limits template and the
// recorded base of its current period. Pure but for the base reads: one per distinct period
// among the clients asked for (a list of 10,000 clients on one monthly template is one read).
import type { Client, ClientStatus } from '../contract/clients.ts';
import { clientBlock, clientLimitsInForce, withUsageReset } from '../contract/client-limits.ts';
import { baseKeyOf, periodOf, type Period } from '../contract/period.ts';
import type { LimitValues } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import type { ClientRow, ClientSessions } from '../store/types.ts';

const iso = (ms: number) => new Date(ms).toISOString();

/** Past this many clients of one period, their bases are read as the period's whole set. */
const MANY = 100;

export interface ClientFacts {
  clientId: string;
  row: ClientRow | undefined;
  sessions: ClientSessions | undefined;
  template: LimitValues | undefined;
}

/** A client's limits in force and the period its caps count in now (null: lifetime caps). */
type InForce = ReturnType<typeof clientLimitsInForce> & { period: Period | null };

type Base = { up: number; down: number };

/** The usage counted against the caps in force now (`recorded`: the period's base, if one is), and whether a cap is reached. */
function usageOf(f: ClientFacts, { limits, period: p }: InForce, recorded: Base | undefined, now: number): { period: Client['period']; over: boolean; until?: string } {
  const totals = { up: f.sessions?.up ?? 0, down: f.sessions?.down ?? 0 };
  const reset = f.row?.reset ? { at: Date.parse(f.row.reset.at), up: f.row.reset.up, down: f.row.reset.down } : null;
  let base = { up: 0, down: 0 };
  let start = p?.start ?? 0;
  if (p) {
    // Nothing recorded yet: the period counts from now (server/quota/job.ts records it within a second).
    base = recorded ?? totals;
    base = { up: Math.min(base.up, totals.up), down: Math.min(base.down, totals.down) };
  }
  const counted = withUsageReset(base, p, reset);
  if (reset && (!p || reset.at >= p.start)) start = Math.max(start, reset.at);
  const used = { up: Math.max(0, totals.up - counted.up), down: Math.max(0, totals.down - counted.down) };
  const over = used.up >= (limits.uploaded_bytes ?? Infinity) || used.down >= (limits.downloaded_bytes ?? Infinity);
  const period = p ? { start: iso(start), end: p.end === null ? null : iso(p.end), uploaded_bytes: used.up, downloaded_bytes: used.down } : null;
  return { period, over, ...(over && p?.end != null ? { until: iso(p.end) } : {}) };
}

function statusOf(f: ClientFacts, over: boolean, now: number): ClientStatus {
  const block = clientBlock(f.row, now);
  if (block === 'client_disabled') return 'disabled';
  if (block === 'client_expired') return 'expired';
  if (over) return 'over_quota';
  const s = f.sessions;
  if (s && s.live > 0 && s.paused === s.live) return 'paused';
  if (s && s.active > 0) return 'active';
  return 'idle';
}

/** The API record of one client, given its limits in force and its period's recorded base. */
function clientView(f: ClientFacts, inForce: InForce, recorded: Base | undefined, now: number): Client {
  const usage = usageOf(f, inForce, recorded, now);
  const s = f.sessions;
  return {
    client_id: f.clientId,
    status: statusOf(f, usage.over, now),
    sessions: s?.live ?? 0,
    uploaded_bytes: s?.up ?? 0,
    downloaded_bytes: s?.down ?? 0,
    period: usage.period,
    limits: inForce.limits as Client['limits'],
    limit_sources: inForce.sources as Client['limit_sources'],
    ...(usage.until ? { over_quota_until: usage.until } : {}),
    disabled: f.row?.disabled ?? false,
    expires_at: f.row?.expires_at ?? null,
    last_seen: s && s.active > 0 ? iso(now) : s?.last_traffic != null ? iso(Math.min(now, s.last_traffic)) : null,
  };
}

/** The API records of clients, in the order given: one base read per distinct period among them. */
export async function clientViews(data: Pick<ControlStore, 'quotaBases'>, customerId: string, facts: ClientFacts[], now: number): Promise<Client[]> {
  const inForce = facts.map((f): InForce => {
    const own = clientLimitsInForce(f.template, f.row?.override?.fields);
    return { ...own, period: periodOf(own.limits, now) };
  });
  const byKey = new Map<number, string[]>();
  inForce.forEach(({ period }, i) => {
    if (!period) return;
    const key = baseKeyOf(period);
    let ids = byKey.get(key);
    if (!ids) byKey.set(key, (ids = []));
    ids.push(facts[i].clientId);
  });
  // A few clients: their own bases; many (a whole list): every base of the period, one read without an IN list.
  const bases = new Map(
    await Promise.all([...byKey].map(async ([key, ids]) => [key, await data.quotaBases(customerId, 'client', key, ids.length <= MANY ? ids : undefined)] as const)),
  );
  return facts.map((f, i) => {
    const p = inForce[i].period;
    return clientView(f, inForce[i], p ? bases.get(baseKeyOf(p))!.get(f.clientId) : undefined, now);
  });
}

/** Newest last_seen first (never seen last), then client_id. */
export function byLastSeen(a: Client, b: Client): number {
  if (a.last_seen !== b.last_seen) {
    if (a.last_seen === null) return 1;
    if (b.last_seen === null) return -1;
    return a.last_seen < b.last_seen ? 1 : -1;
  }
  return a.client_id < b.client_id ? -1 : a.client_id > b.client_id ? 1 : 0;
}
