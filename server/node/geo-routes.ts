// The node's side of the geo proxy: requests for another zone's country or city leave through
// that node's relay. The zones, the relays and who may use this node's relay listener are the
// control plane's, taken from its state.
import type { ZoneInfo } from '../domain.ts';
import { routeFor, routesFor, type RelayTarget } from '../cluster/geo.ts';
import type { GeoRoute } from '../dataplane/api.ts';

export class NodeGeo {
  /** This node's zone code. */
  zone = '';
  zones: ZoneInfo[] = [];
  relays: RelayTarget[] = [];
  /** Who may use this node's relay listener now (the control plane's list: a removed node is gone from it). */
  entries: ReadonlySet<string> = new Set();

  route(country: string, city: string | undefined): ReturnType<typeof routeFor> {
    return routeFor(this.zones, country, city, (z) => z.code === this.zone, this.relays);
  }

  /** Every way out: here when this node's zone is one of the place's, and every other up node's relay there. */
  routes(country: string, city: string | undefined): GeoRoute[] {
    return routesFor(this.zones, country, city, (z) => z.code === this.zone, this.relays);
  }
}
