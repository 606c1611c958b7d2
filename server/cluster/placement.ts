// Where a new session goes, and which zones have active nodes: the zone catalogue (a file, or
// the built-in default) together with the data-plane nodes of the store's catalogue.
//
// A zone has active nodes when it lists `local` (this `serve` process's own data plane), when
// one of the store's nodes attached to it was in contact within NODE_UP_SECONDS, or, as in the
// single-process mode before nodes existed, when the file lists a node it does not mark "down"
// (such file-only nodes are carried by the local data plane). A session is placed on `local`
// when the zone lists it, else on the least-loaded up node of the zone, else (file-only nodes)
// on `local` as before; with none of these the zone is unavailable.
import type { ZoneInfo } from '../domain.ts';
import type { ControlStore } from '../store/control.ts';
import type { NodeInfo } from '../store/store.ts';
import type { ZoneCatalogue } from '../zones/catalogue.ts';

export type Placement = { kind: 'local' } | { kind: 'node'; node: NodeInfo };

export class ZonePlacement {
  private readonly catalogue: ZoneCatalogue;
  private readonly store: ControlStore;

  constructor(catalogue: ZoneCatalogue, store: ControlStore) {
    this.catalogue = catalogue;
    this.store = store;
  }

  /** The catalogue's zones, each with has_active_nodes as of now. */
  async list(): Promise<ZoneInfo[]> {
    const zones = this.catalogue.list();
    const withNodes = new Set(await this.store.activeNodeZones());
    if (withNodes.size === 0) return zones;
    return zones.map((z) => (z.has_active_nodes || !withNodes.has(z.code) ? z : { ...z, has_active_nodes: true }));
  }

  find(code: string): ZoneInfo | undefined {
    return this.catalogue.find(code);
  }

  /** The node a new session of `zone` goes to, or null when the zone has no active node. */
  async place(zone: ZoneInfo): Promise<Placement | null> {
    if (zone.nodes.includes('local')) return { kind: 'local' };
    const [node] = await this.store.upNodes(zone.code);
    if (node) return { kind: 'node', node };
    return zone.has_active_nodes ? { kind: 'local' } : null;
  }
}
