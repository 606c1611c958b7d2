// The geo proxy in a cluster (issue 10): a proxy request whose user name targets a country (and a
// city) leaves the cluster from an up node there; when it entered elsewhere, the entry relays it
// to that node's relay listener (server/node/relay-server.ts, dialled by dataplane/relay-dial.ts).
// The entry counts the bytes on the session, the exit node counts nothing: traffic is counted once.
//
// Permission: the control plane hands each node (in its state) and its own data planes a grant for
// every relay target: `<expiry ms>.<HMAC-SHA256 hex>` over `<from>.<expiry>`, keyed by a key
// derived from the target node's token hash, which the target derives from its own token. So no
// new secret is stored or sent, a grant names who may use it, and it expires within 10 minutes.
// The target's relay certificate (self-signed, made by the node) is pinned by its SHA-256, which
// the node reports with its ports.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { GeoRoute } from '../dataplane/api.ts';
import type { ZoneInfo } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import type { RelayNode } from '../store/store.ts';
import { cityToken } from '../contract/proxy-string.ts';

/** Grants are valid this long past the minute they were made in. */
const GRANT_MS = 10 * 60_000;

const relayKey = (tokenHash: string) => createHash('sha256').update(`vad-relay\u0000${tokenHash}`).digest();

/** A grant for `from` to use the relay of the node whose token hash is given. */
export function signRelayGrant(tokenHash: string, from: string, now = Date.now()): string {
  const exp = Math.ceil(now / 60_000) * 60_000 + GRANT_MS;
  return `${exp}.${createHmac('sha256', relayKey(tokenHash)).update(`${from}.${exp}`).digest('hex')}`;
}

/** Whether `grant` lets `from` use this node's relay (the node's own token hash), now. */
export function verifyRelayGrant(tokenHash: string, from: string, grant: string, now = Date.now()): boolean {
  const m = /^(\d{13})\.([0-9a-f]{64})$/.exec(grant);
  if (!m || Number(m[1]) < now || Number(m[1]) > now + GRANT_MS + 60_000) return false;
  const want = createHmac('sha256', relayKey(tokenHash)).update(`${from}.${m[1]}`).digest();
  return timingSafeEqual(want, Buffer.from(m[2], 'hex'));
}

/** A relay target as a node's state carries it (the grant made for that node). */
export interface RelayTarget {
  node: string;
  zone: string;
  host: string;
  port: number;
  pcs: string;
  grant: string;
  /** Whom the grant was made for (sent with it). */
  from: string;
}

export function relayTargets(nodes: RelayNode[], from: string, exceptId?: string): RelayTarget[] {
  return nodes
    .filter((n) => n.id !== exceptId)
    .map((n) => ({ node: n.name, zone: n.zone, host: n.public_host, port: n.relay_port, pcs: n.relay_pcs, grant: signRelayGrant(n.token_hash, from), from }));
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
  return relay ? { via: 'relay', node: relay.node, host: relay.host, port: relay.port, pcs: relay.pcs, grant: relay.grant, from: relay.from } : null;
}

/**
 * A `serve` process's geo routes for its own data plane: its zones listing `local` leave from
 * here; others through the relays of the store's up nodes (read once a second, for this data
 * plane and for the states sent to the nodes connected here); zones with only file-listed nodes
 * (the single-process mode before nodes existed) leave from here as before.
 */
export class ServeGeoRoutes {
  private relays: RelayTarget[] = [];
  /** The up nodes with a relay listener, as last read (the node channel builds every node's targets from it). */
  nodes: RelayNode[] = [];
  private nodeZones = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  static readonly FROM = 'serve';

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
    const here = (z: ZoneInfo) => z.nodes.includes('local') || (z.has_active_nodes && !this.nodeZones.has(z.code) && !this.relays.some((r) => r.zone === z.code));
    return routeFor(this.zones(), country, city, here, this.relays);
  }
}
