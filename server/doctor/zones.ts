// The zone catalogue: it loads, every zone has a country, no zone id appears twice. The raw file
// is read first so a finding names the zone; then the catalogue's own loader must accept it.
import { readFileSync } from 'node:fs';
import { ZoneCatalogue } from '../zones/catalogue.ts';
import { type Check, fail, messageOf, pass } from './report.ts';
import type { ZoneNodes } from './store.ts';

export function zonesCheck(file: string | undefined): { check: Check; zones: ZoneNodes[] } {
  const title = 'Zone catalogue';
  const from = file ?? 'the built-in catalogue';
  const fix = file ? `correct ${file} (see docs/operations.md for its format) or leave --zones out for the built-in one` : 'reinstall vpn-access';
  let raw: { zones?: { code?: unknown; country?: unknown }[] } | undefined;
  try {
    raw = file ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
  } catch (err) {
    return { zones: [], check: fail('zones', title, `${from} cannot be read: ${messageOf(err)}`, fix) };
  }
  if (raw && Array.isArray(raw.zones)) {
    const seen = new Set<unknown>();
    const twice = raw.zones.filter((z) => (seen.has(z?.code) ? true : (seen.add(z?.code), false))).map((z) => String(z.code));
    if (twice.length) return { zones: [], check: fail('zones', title, `${from} lists zone ${[...new Set(twice)].join(', ')} more than once`, fix) };
    const countryless = raw.zones.filter((z) => typeof z?.country !== 'string' || !z.country).map((z) => String(z?.code));
    if (countryless.length) return { zones: [], check: fail('zones', title, `in ${from}, zone ${countryless.join(', ')} has no country`, fix) };
  }
  let catalogue: ZoneCatalogue;
  try {
    catalogue = ZoneCatalogue.load(file);
  } catch (err) {
    return { zones: [], check: fail('zones', title, file ? messageOf(err) : `${from} is refused: ${messageOf(err)}`, fix) };
  }
  const list = catalogue.list();
  const zones = list.map((z) => ({ code: z.code, catalogueNodes: z.nodes, catalogueActive: z.has_active_nodes }));
  const countries = new Set(list.map((z) => z.country)).size;
  return { zones, check: pass('zones', title, `${list.length} zones in ${countries} countries from ${from}`) };
}
