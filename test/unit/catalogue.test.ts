// The zone catalogue: validation of the file, has_active_nodes, the built-in default.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ZoneCatalogue } from '../../server/zones/catalogue.ts';
import { removeDir, tempDir } from '../helpers/server.ts';

type File = ConstructorParameters<typeof ZoneCatalogue>[0];
const zone = (over: Record<string, unknown> = {}) => ({ code: 'de-fra', name: 'Frankfurt', country: 'DE', cities: ['frankfurt'], nodes: ['local'], ...over });
const make = (zones: unknown[], extra: Record<string, unknown> = {}) => new ZoneCatalogue({ zones, ...extra } as unknown as File);

test('the built-in catalogue: several countries and cities, valid codes, at least one zone without nodes', () => {
  const c = ZoneCatalogue.load();
  const zones = c.list();
  assert.ok(zones.length >= 5);
  assert.ok(new Set(zones.map((z) => z.country)).size >= 3);
  assert.ok(zones.flatMap((z) => z.cities).length >= 5);
  for (const z of zones) {
    assert.match(z.code, /^[a-z0-9-]{2,32}$/);
    assert.match(z.country, /^[A-Z]{2}$/);
    for (const city of z.cities) assert.equal(city, city.toLowerCase());
  }
  assert.ok(zones.some((z) => z.nodes.length === 0 && !z.has_active_nodes));
  assert.ok(zones.some((z) => z.nodes.includes('local') && z.has_active_nodes));
  assert.equal(c.find('br-sao')?.has_active_nodes, false);
  assert.equal(c.find('de-fra')?.code, 'de-fra');
  assert.equal(c.find('nope'), undefined);
  assert.equal(c.find('__proto__'), undefined);
});

test('has_active_nodes: local is always up; other nodes unless marked down', () => {
  const c = make(
    [
      zone({ code: 'a1', nodes: ['local'] }),
      zone({ code: 'a2', nodes: [] }),
      zone({ code: 'a3', nodes: ['n1'] }),
      zone({ code: 'a4', nodes: ['n2'] }),
      zone({ code: 'a5', nodes: ['n2', 'n1'] }),
      zone({ code: 'a6', nodes: undefined }),
      zone({ code: 'a7', nodes: ['local', 'n2'] }),
    ],
    { node_status: { n2: 'down', n1: 'up' } },
  );
  assert.deepEqual(
    c.list().map((z) => [z.code, z.has_active_nodes]),
    [['a1', true], ['a2', false], ['a3', true], ['a4', false], ['a5', true], ['a6', false], ['a7', true]],
  );
});

test('cities are lower-cased; missing cities are an empty list', () => {
  const c = make([zone({ cities: ['New York', 'SAN DIEGO'] }), zone({ code: 'x2', cities: undefined })]);
  assert.deepEqual(c.list()[0].cities, ['new york', 'san diego']);
  assert.deepEqual(c.list()[1].cities, []);
});

test('invalid catalogues are refused with a message naming the problem', () => {
  const bad: [unknown, RegExp][] = [
    [null, /expected/],
    [{}, /expected/],
    [{ zones: 'x' }, /expected/],
    [{ zones: [zone({ code: 'DE-FRA' })] }, /zones\[0\]\.code/],
    [{ zones: [zone({ code: 'a' })] }, /code/],
    [{ zones: [zone({ code: 'x'.repeat(33) })] }, /code/],
    [{ zones: [zone({ code: 'de_fra' })] }, /code/],
    [{ zones: [zone({ code: 5 })] }, /code/],
    [{ zones: [zone(), zone({ code: 'ok', name: '' })] }, /zones\[1\]\.name/],
    [{ zones: [zone({ country: 'de' })] }, /country/],
    [{ zones: [zone({ country: 'DEU' })] }, /country/],
    [{ zones: [zone({ country: undefined })] }, /country/],
    [{ zones: [zone(), zone()] }, /duplicate/],
  ];
  for (const [file, message] of bad) assert.throws(() => new ZoneCatalogue(file as File), message, JSON.stringify(file));
});

test('load() reads a catalogue file; a missing or broken file throws', () => {
  const dir = tempDir('vad-zones-');
  try {
    const path = join(dir, 'zones.json');
    writeFileSync(path, JSON.stringify({ zones: [zone({ code: 'xx-one', nodes: ['edge'] })], node_status: { edge: 'down' } }));
    const c = ZoneCatalogue.load(path);
    assert.deepEqual(c.list().map((z) => [z.code, z.has_active_nodes]), [['xx-one', false]]);
    writeFileSync(path, '{"zones": [');
    // Each error names the file.
    assert.throws(() => ZoneCatalogue.load(path), { message: `zone catalogue ${path} is not valid JSON: Unexpected end of JSON input` });
    assert.throws(() => ZoneCatalogue.load(join(dir, 'missing.json')), new RegExp(`^Error: zone catalogue ${join(dir, 'missing.json')} cannot be read: ENOENT`));
    writeFileSync(path, JSON.stringify({ zones: [zone({ code: 'X' })] }));
    assert.throws(() => ZoneCatalogue.load(path), { message: `zone catalogue ${path}: zones[0].code must match /^[a-z0-9-]{2,32}$/` });
  } finally {
    removeDir(dir);
  }
});
