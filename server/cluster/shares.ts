// A node's share of its customers' limits across the cluster, computed by the control
// plane with each state it sends the node (node-channel.ts):
//  - byte caps: a grant per capped customer and client (server/store/grants.ts), topped up to
//    about two seconds of the node's recent traffic (at least 1 MiB, at most 256 MiB), so that
//    the grants of all nodes together never exceed what the cap leaves;
//  - speed caps: the limit divided among the nodes carrying the customer's (or client's) active
//    sessions, this node counted, so that together they move at most the limit.
// The node applies them with DataPlane.setClusterShare (server/node/run.ts).
import type { ClientControl, LimitScope, LimitValues, SessionRow } from '../domain.ts';
import { baseKeyOf, isPeriodic, periodOf } from '../contract/period.ts';
import { mergeClientLimits, withUsageReset } from '../contract/client-limits.ts';
import type { ControlStore } from '../store/control.ts';

/** One entity's share as sent to a node; `left` null: no cap that way. */
export interface WireShare {
  left: { up: number | null; down: number | null };
  final: { up: boolean; down: boolean };
  rate: number;
  /** The grant's generation (grants.ts): the node ignores shares older than its last release. */
  gen?: number;
}

const MIN_WANT = 1 << 20;
const MAX_WANT = 256 << 20;
/** A grant is sized to this many milliseconds of the node's recent traffic. */
const WANT_MS = 2000;

/** The key of a customer's share (its id) or of one client's. */
export const shareKey = (customerId: string, clientId: string | null) => (clientId === null ? customerId : `${customerId}\u0000${clientId}`);

const hasCap = (v: LimitValues | null | undefined) => v != null && (v.uploaded_bytes != null || v.downloaded_bytes != null);
const hasSpeed = (v: LimitValues | null | undefined) => v != null && (v.upload_speed != null || v.download_speed != null);

/** Per node channel: the node's recent use of each grant (its used bytes over time), to size the next one. */
export class GrantPace {
  private readonly seen = new Map<string, { at: number; up: number; down: number; rateUp: number; rateDown: number }>();

  /** The size of the next top-up: about WANT_MS of the node's recent traffic. */
  peek(key: string): { up: number; down: number } {
    const last = this.seen.get(key);
    const size = (r: number) => Math.min(MAX_WANT, Math.max(MIN_WANT, Math.ceil((r * WANT_MS) / 1000)));
    return { up: size(last?.rateUp ?? 0), down: size(last?.rateDown ?? 0) };
  }

  /** The node's used bytes of this grant as the control plane last read them. */
  observe(key: string, used: { up: number; down: number }, now: number): void {
    const last = this.seen.get(key);
    if (!last) {
      this.seen.set(key, { at: now, up: used.up, down: used.down, rateUp: 0, rateDown: 0 });
      return;
    }
    if (now - last.at < 200) return;
    const dt = (now - last.at) / 1000;
    // The newest rate, or half the previous one: a burst is not forgotten at once.
    const rateUp = Math.max((used.up - last.up) / dt, last.rateUp / 2);
    const rateDown = Math.max((used.down - last.down) / dt, last.rateDown / 2);
    this.seen.set(key, { at: now, up: used.up, down: used.down, rateUp, rateDown });
  }
}

export async function nodeShares(
  data: ControlStore,
  nodeId: string,
  sessions: SessionRow[],
  { limits, clients: controls }: { limits: Record<string, Partial<Record<LimitScope, LimitValues | null>>>; clients: Record<string, ClientControl> },
  bases: Record<string, { up: number; down: number }>,
  baseKey: (customerId: string, scope: LimitScope, entityId: string, periodKey: number) => string,
  pace: GrantPace,
  now: number,
): Promise<Record<string, WireShare>> {
  const out: Record<string, WireShare> = {};
  const live = sessions.filter((s) => s.status !== 'ended');
  const customers = new Set(live.map((s) => s.customer_id));
  for (const customerId of customers) {
    const l = limits[customerId] ?? {};
    const clients = new Set(live.filter((s) => s.customer_id === customerId).map((s) => s.client_id));
    // Clients (extension): each client's limits in force (its override over the template), and its usage reset.
    const inForce = (clientId: string | null) => (clientId === null ? l.global : mergeClientLimits(l.client ?? undefined, controls[shareKey(customerId, clientId)]));
    const speedy = hasSpeed(l.global) || [...clients].some((c) => hasSpeed(inForce(c)));
    const active = speedy ? await data.activeSessionNodes(customerId) : [];
    const carriers = (clientId: string | null) => {
      const set = new Set(active.filter((a) => clientId === null || a.client_id === clientId).map((a) => a.node_id ?? 'local'));
      set.add(nodeId);
      return set.size;
    };
    const entities: Array<{ clientId: string | null; scope: LimitScope }> = [{ clientId: null, scope: 'global' }, ...[...clients].map((c) => ({ clientId: c, scope: 'client' as const }))];
    for (const { clientId, scope } of entities) {
      const values = inForce(clientId);
      if (!hasCap(values) && !hasSpeed(values)) continue;
      const share: WireShare = { left: { up: null, down: null }, final: { up: false, down: false }, rate: hasSpeed(values) ? 1 / carriers(clientId) : 1 };
      if (hasCap(values)) {
        const period = isPeriodic(values ?? undefined) ? periodOf(values ?? undefined, now) : null;
        const entity = clientId ?? customerId;
        let base = period ? bases[baseKey(customerId, scope, entity, baseKeyOf(period))] ?? null : null;
        const reset = clientId === null ? null : (controls[shareKey(customerId, clientId)]?.reset ?? null);
        if (reset && (!period || reset.at >= period.start)) base = withUsageReset(base ?? { up: 0, down: 0 }, period, reset);
        const key = shareKey(customerId, clientId);
        const probe = await data.grantBytes(nodeId, customerId, clientId ?? '', {
          cap: { up: values!.uploaded_bytes ?? null, down: values!.downloaded_bytes ?? null },
          base,
          periodic: period !== null,
          want: pace.peek(key),
        });
        pace.observe(key, probe.used, now);
        share.left = probe.left;
        share.final = probe.final;
        share.gen = probe.gen;
      }
      out[shareKey(customerId, clientId)] = share;
    }
  }
  return out;
}
