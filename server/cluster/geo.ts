// The geo proxy in a cluster: a proxy request whose user name targets a country (and a
// city) leaves the cluster from an up node there; when it entered elsewhere, the entry relays it
// to that node's relay listener (server/node/relay-server.ts, dialled by dataplane/relay-dial.ts).
// The entry counts the bytes on the session, the exit node counts nothing: traffic is counted once.
//
// Permission (dataplane/relay-grant.ts): the control plane hands each node (in its state) and its
// own data planes a short-lived relay KEY for every relay target, derived from the target node's
// token hash (which the target derives from its own token) and naming the entry; the entry makes
// a single-use GRANT per connection from it, bound to the session (a hash of its id) and the
// destination. The target also gets the list of cluster members (relayEntries): grants of an
// entry no longer listed (a removed node) are refused at once. The target's relay certificate
// (self-signed, made by the node) is pinned by its SHA-256, which the node reports with its ports.
import type { GeoRoute } from '../dataplane/api.ts';
import type { ZoneInfo } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import type { RelayNode } from '../store/store.ts';
import { cityToken } from '../contract/proxy-string.ts';
import { keyExpiry, relayKey } from '../dataplane/relay-grant.ts';

/** A relay target as a node's state carries it (with the relay key made for that node). */
export interface RelayTarget {
  node: string;
  zone: string;
  host: string;
  port: number;
  pcs: string;
  /** Whom the key was made for (sent with each grant). */
  from: string;
  /** The key's expiry (ms) and the key (hex): the entry signs each connection's grant with it. */
  exp: number;
  key: string;
}

export function relayTargets(nodes: RelayNode[], from: string, exceptId?: string, now = Date.now()): RelayTarget[] {
  const exp = keyExpiry(now);
  return nodes
    .filter((n) => n.id !== exceptId)
    .map((n) => ({ node: n.name, zone: n.zone, host: n.public_host, port: n.relay_port, pcs: n.relay_pcs, from, exp, key: relayKey(n.token_hash, from, exp) }));
}

/** The catalogue's zones in a country (and with the city, when given). */
export function zonesFor(zones: ZoneInfo[], country: string, city: string | undefined): ZoneInfo[] {
  return zones.filter((z) => z.country.toUpperCase() === country && (!city || z.cities.some((c) => cityToken(c) === city)));
}

/**
 * Where a request for `country` / `city` leaves: here when `here(zone)` says so for one of its
 * zones, else through an up node's relay in one of them (the first by name), else null (412).
 */
export function routeFor(zones: ZoneInfo[], country: string, city: string | undefined, here: (z: ZoneInfo) => boolean, relays: RelayTarget[]): GeoRoute | null {
  const targets = zonesFor(zones, country, city);
  if (targets.some(here)) return { via: 'here' };
  const codes = new Set(targets.map((z) => z.code));
  const relay = relays.find((r) => codes.has(r.zone));
  return relay ? { via: 'relay', node: relay.node, host: relay.host, port: relay.port, pcs: relay.pcs, from: relay.from, exp: relay.exp, key: relay.key } : null;
}

/** Every way out for `country` / `city`: here (first) when `here(zone)` says so for one of its zones, and each up node's relay in one of them. */
export function routesFor(zones: ZoneInfo[], country: string, city: string | undefined, here: (z: ZoneInfo) => boolean, relays: RelayTarget[]): GeoRoute[] {
  const targets = zonesFor(zones, country, city);
  const codes = new Set(targets.map((z) => z.code));
  const out: GeoRoute[] = targets.some(here) ? [{ via: 'here' }] : [];
  const nodes = new Set<string>();
  for (const r of relays) {
    if (!codes.has(r.zone) || nodes.has(r.node)) continue;
    nodes.add(r.node);
    out.push({ via: 'relay', node: r.node, host: r.host, port: r.port, pcs: r.pcs, from: r.from, exp: r.exp, key: r.key });
  }
  return out;
}

/**
 * A `serve` process's geo routes for its own data plane: its zones listing `local` leave from
 * here; others through the relays of the store's up nodes (read once a second, for this data
 * plane and for the states sent to the nodes connected here); zones with only file-listed nodes
 * (the single-process mode before nodes existed) leave from here as before.
 */
export class ServeGeoRoutes {
  static readonly FROM = 'serve';
  private relays: RelayTarget[] = [];
  /** The up nodes with a relay listener, as last read (the node channel builds every node's targets from it). */
  nodes: RelayNode[] = [];
  /**
   * Who may use a relay now: every node of the catalogue (by id) and `serve`. Sent to the nodes
   * in their state; a removed node's grants are refused within a second or two.
   */
  entries: string[] = [ServeGeoRoutes.FROM];
  private nodeZones = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  private readonly data: ControlStore;
  private readonly zones: () => ZoneInfo[];

  constructor(data: ControlStore, zones: () => ZoneInfo[]) {
    this.data = data;
    this.zones = zones;
  }

  async refresh(): Promise<void> {
    try {
      const nodes = await this.data.relayNodes();
      this.nodes = nodes;
      this.relays = relayTargets(nodes, ServeGeoRoutes.FROM);
      this.entries = [ServeGeoRoutes.FROM, ...(await this.data.listNodes()).map((n) => n.id)];
      this.nodeZones = new Set(await this.data.activeNodeZones());
    } catch {
      /* the database is away: the last routes stay */
    }
  }

  start(): void {
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  route(country: string, city: string | undefined): GeoRoute | null {
    return routeFor(this.zones(), country, city, this.here, this.relays);
  }

  routes(country: string, city: string | undefined): GeoRoute[] {
    return routesFor(this.zones(), country, city, this.here, this.relays);
  }

  private readonly here = (z: ZoneInfo): boolean =>
    z.nodes.includes('local') || (z.has_active_nodes && !this.nodeZones.has(z.code) && !this.relays.some((r) => r.zone === z.code));
}
