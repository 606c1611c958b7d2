// The control plane's `state` message applied on a node: the sessions placed here with their
// customers' limits, counter sums and quota bases (the node's view), the geo routes, the public
// host its certificate must name, and its shares of the customers' limits. Pause and a session
// no longer placed here cut its connections at once.
import type { DataPlane } from '../dataplane/api.ts';
import type { Logger } from '../domain.ts';
import type { NodeState } from '../cluster/node-channel.ts';
import type { TlsCertificates } from '../tls/certificates.ts';
import type { NodeView } from './view.ts';
import type { NodeGeo } from './geo-routes.ts';
import type { NodeShares, Owners } from './shares.ts';

export interface StateTargets {
  view: NodeView;
  dataPlane: Pick<DataPlane, 'live' | 'pause' | 'limitsChanged'>;
  owners: Owners;
  geo: NodeGeo;
  tls: Pick<TlsCertificates, 'coverHost'>;
  shares: Pick<NodeShares, 'apply'>;
  log: Logger;
}

/** How long a session read just before its first connection outlives a state that does not name it yet. */
export const FRESH_GRACE_MS = 5000;

export function applyState(state: NodeState, t: StateTargets): void {
  const { view, dataPlane, owners, geo, log } = t;
  const before = view.sessions;
  const oldLimits = view.limits;
  const oldClients = view.clients;
  view.sessions = new Map(state.sessions.map((s) => [s.id, s]));
  view.limits = state.limits;
  view.sums = state.sums;
  view.bases = state.bases ?? {};
  view.clients = state.clients ?? {};
  // Read from the control plane a moment ago: a state built before that read may lack it.
  const at0 = Date.now();
  for (const [id, at] of view.freshAt) {
    if (at0 - at > FRESH_GRACE_MS || view.sessions.has(id)) {
      view.freshAt.delete(id);
      continue;
    }
    const row = before.get(id);
    if (!row) continue;
    view.sessions.set(id, row);
    if (!view.limits[row.customer_id] && oldLimits[row.customer_id]) view.limits = { ...view.limits, [row.customer_id]: oldLimits[row.customer_id] };
  }
  for (const [id] of before) {
    const now = view.sessions.get(id);
    // No longer placed here, or paused: cut its connections here.
    if ((!now || now.paused) && dataPlane.live(id)) dataPlane.pause(id);
  }
  for (const s of state.sessions) if (s.paused && dataPlane.live(s.id)) dataPlane.pause(s.id);
  const changed = new Set(Object.keys(state.limits).filter((c) => JSON.stringify(oldLimits[c]) !== JSON.stringify(state.limits[c])));
  // Clients (extension): a client disabled, its expiry, override or usage reset changed.
  for (const k of new Set([...Object.keys(oldClients), ...Object.keys(view.clients)])) {
    if (JSON.stringify(oldClients[k]) !== JSON.stringify(view.clients[k])) changed.add(k.slice(0, k.indexOf('\u0000')));
  }
  for (const c of changed) dataPlane.limitsChanged(c);
  for (const row of state.sessions) owners.set(row.id, { customer: row.customer_id, client: row.client_id });
  if (typeof state.zone === 'string') geo.zone = state.zone;
  if (typeof state.public_host === 'string' && state.public_host) {
    t.tls.coverHost(state.public_host).catch((err: unknown) => log.warn({ err: String(err) }, `TLS: no certificate for ${state.public_host} could be made; keeping the one in force`));
  }
  if (Array.isArray(state.zones)) geo.zones = state.zones;
  if (Array.isArray(state.relays)) geo.relays = state.relays;
  if (Array.isArray(state.relay_entries)) geo.entries = new Set(state.relay_entries);
  t.shares.apply(state.shares ?? {}, state.shareSeq ?? 0);
}
