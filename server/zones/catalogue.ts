// The zone catalogue: a JSON file (or the built-in default) of zones, their country,
// cities and nodes. The node `local` is this server itself and is always up.
import { readFileSync } from 'node:fs';
import type { ZoneInfo } from '../domain.ts';
import defaultCatalogue from './default-zones.json' with { type: 'json' };

interface CatalogueFile {
  zones: { code: string; name: string; country: string; cities?: string[]; nodes?: string[] }[];
  /** Optional: the state of nodes other than `local` ("up" or "down"); unlisted ones count as up. */
  node_status?: Record<string, 'up' | 'down'>;
}

const CODE = /^[a-z0-9-]{2,32}$/;
const COUNTRY = /^[A-Z]{2}$/;

export class ZoneCatalogue {
  private readonly zones: ZoneInfo[];
  private readonly byCode: Map<string, ZoneInfo>;

  constructor(file: CatalogueFile) {
    if (!file || !Array.isArray(file.zones)) throw new Error('zone catalogue: expected {"zones": [...]}');
    const status = file.node_status ?? {};
    this.zones = file.zones.map((z, i) => {
      if (typeof z.code !== 'string' || !CODE.test(z.code)) throw new Error(`zone catalogue: zones[${i}].code must match ${CODE}`);
      if (typeof z.name !== 'string' || !z.name) throw new Error(`zone catalogue: zones[${i}].name is required`);
      if (typeof z.country !== 'string' || !COUNTRY.test(z.country)) throw new Error(`zone catalogue: zones[${i}].country must be two upper-case letters`);
      const nodes = z.nodes ?? [];
      const cities = (z.cities ?? []).map((c) => c.toLowerCase());
      return {
        code: z.code,
        name: z.name,
        country: z.country,
        cities,
        nodes,
        has_active_nodes: nodes.some((n) => n === 'local' || status[n] !== 'down'),
      };
    });
    this.byCode = new Map(this.zones.map((z) => [z.code, z]));
    if (this.byCode.size !== this.zones.length) throw new Error('zone catalogue: duplicate zone code');
  }

  /** The catalogue in `path` (the built-in one without); its errors name the file. */
  static load(path?: string): ZoneCatalogue {
    if (!path) return new ZoneCatalogue(defaultCatalogue as CatalogueFile);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`zone catalogue ${path} cannot be read: ${(err as Error).message}`);
    }
    let file: CatalogueFile;
    try {
      file = JSON.parse(text) as CatalogueFile;
    } catch (err) {
      throw new Error(`zone catalogue ${path} is not valid JSON: ${(err as Error).message}`);
    }
    try {
      return new ZoneCatalogue(file);
    } catch (err) {
      throw new Error((err as Error).message.replace(/^zone catalogue:/, `zone catalogue ${path}:`));
    }
  }

  list(): ZoneInfo[] {
    return this.zones;
  }

  find(code: string): ZoneInfo | undefined {
    return this.byCode.get(code);
  }
}
