// What a subscription says about the client's traffic: the bytes counted in the period its cap
// is in force (a monthly cap counts this month, not the lifetime), the cap itself, when the
// period renews and when access ends. Apps read it from `subscription-userinfo`; the page shows it.
import { baseKeyOf, isPeriodic, periodOf } from '../contract/period.ts';
import { mergeClientLimits, withUsageReset } from '../contract/client-limits.ts';
import type { ControlStore } from '../store/control.ts';

export interface ClientUsage {
  upload: number;
  download: number;
  /** The byte cap in force (upload + download caps), 0 when there is none (apps read "no limit"). */
  total: number;
  /** When the period renews (epoch ms); null for a lifetime cap or a rolling window. */
  renewsAt: number | null;
  /** When access ends (epoch ms): the last expiry of the usable sessions when all of them have one. */
  expiresAt: number | null;
}

export type UsageStore = Pick<ControlStore, 'sumCounters' | 'getLimits' | 'quotaBase' | 'getClientControl'>;

export async function clientUsage(store: UsageStore, customerId: string, clientId: string, sessionExpiries: (string | null)[], now: number): Promise<ClientUsage> {
  // The caps in force for this client: its override (clients extension) over the template.
  const control = await store.getClientControl(customerId, clientId);
  const caps = mergeClientLimits((await store.getLimits(customerId, 'client')) ?? undefined, control) ?? {};
  const lifetime = await store.sumCounters(customerId, clientId);
  let upload = lifetime.uploaded_bytes;
  let download = lifetime.downloaded_bytes;
  let renewsAt: number | null = null;
  const period = isPeriodic(caps) ? periodOf(caps, now) : null;
  // The period's base (what was counted before it began), recorded by the quota job; none yet
  // means the period started counting just now. A usage reset in the period (or any, for a
  // lifetime cap) counts from the reset.
  const recorded = period ? await store.quotaBase(customerId, 'client', clientId, baseKeyOf(period)) : { up: 0, down: 0 };
  const base = recorded ? withUsageReset(recorded, period, control?.reset ?? null) : period ? { up: upload, down: download } : null;
  if (base) {
    upload = Math.max(0, upload - base.up);
    download = Math.max(0, download - base.down);
  }
  if (period) renewsAt = period.end;
  const ends = sessionExpiries.length > 0 && sessionExpiries.every((e) => e !== null) ? Math.max(...sessionExpiries.map((e) => Date.parse(e!))) : null;
  return { upload, download, total: (caps.uploaded_bytes ?? 0) + (caps.downloaded_bytes ?? 0), renewsAt, expiresAt: ends };
}

/** The `subscription-userinfo` header value (expire in epoch seconds, only when known). */
export function userinfoHeader(u: ClientUsage): string {
  return `upload=${u.upload}; download=${u.download}; total=${u.total}${u.expiresAt === null ? '' : `; expire=${Math.floor(u.expiresAt / 1000)}`}`;
}
