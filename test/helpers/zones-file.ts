// A zone catalogue file for a test server: Frankfurt (de-fra) is the serve process's own
// (`local`), and each zone given is served by nodes alone (none listed: they join by zone).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** [code, name, country, city] of a zone served by nodes. */
export type NodeZone = [code: string, name: string, country: string, city: string];

/** Writes `<dir>/zones.json` and returns its path. */
export function writeZonesFile(dir: string, ...nodeZones: NodeZone[]): string {
  const file = join(dir, 'zones.json');
  const zones = [
    { code: 'de-fra', name: 'Frankfurt', country: 'DE', cities: ['frankfurt'], nodes: ['local'] },
    ...nodeZones.map(([code, name, country, city]) => ({ code, name, country, cities: [city], nodes: [] })),
  ];
  writeFileSync(file, JSON.stringify({ zones }));
  return file;
}
