// What the renderer's first load carries, held by a test: its entry chunk (what the window runs
// before its first paint) must not include the schema library, which the renderer needs only for
// a few names (server/contract/client-names.ts has them, without typebox), nor the chart library,
// which UsageChart.tsx loads on first use. The names kept apart from the schemas must stay equal
// to the schemas' own. Bundled here with esbuild (what scripts/build-server.ts uses), whose
// metafile names the inputs of every output; Vite's build splits the same way at the same import().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { build } from 'esbuild';
import { CLIENT_LIMIT_KEYS, CLIENT_STATUSES, MAX_LISTED_CLIENTS } from '../../server/contract/client-names.ts';
import { ClientListQuery, ClientStatusValue } from '../../server/contract/clients.ts';
import { clientFields } from '../../server/contract/schemas.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');

test('the renderer loads neither the schema library nor the charts before its first paint', async () => {
  const r = await build({
    absWorkingDir: ROOT,
    entryPoints: { main: 'renderer/src/main.tsx' },
    bundle: true,
    splitting: true,
    format: 'esm',
    outdir: 'out',
    write: false,
    metafile: true,
    logLevel: 'error',
    loader: { '.css': 'empty', '.png': 'empty', '.svg': 'empty' },
  });
  const outputs = Object.values(r.metafile.outputs);
  const entry = outputs.find((o) => o.entryPoint === 'renderer/src/main.tsx');
  assert.ok(entry, 'the entry chunk');
  // The entry and the chunks it imports statically are what loads first.
  const first = new Set<string>();
  const walk = (o: (typeof outputs)[number]) => {
    for (const i of Object.keys(o.inputs)) first.add(i);
    for (const imp of o.imports) if (imp.kind === 'import-statement' && r.metafile.outputs[imp.path] && !first.has(`chunk:${imp.path}`)) {
      first.add(`chunk:${imp.path}`);
      walk(r.metafile.outputs[imp.path]!);
    }
  };
  walk(entry);
  const pkgs = new Set([...first].map((i) => i.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1]).filter(Boolean));
  assert.ok(pkgs.has('react-dom'), 'the check sees packages at all');
  assert.equal(pkgs.has('typebox'), false, 'typebox in the first load');
  assert.equal(pkgs.has('recharts'), false, 'recharts in the first load');
  assert.equal(first.has('server/contract/schemas.ts'), false, 'the schemas in the first load');
  // The charts are there, in a chunk of their own.
  assert.ok(outputs.some((o) => Object.keys(o.inputs).some((i) => i.includes('node_modules/recharts/'))));
});

test('the names kept apart from the schemas equal the schemas', () => {
  assert.deepEqual(Object.keys(clientFields), [...CLIENT_LIMIT_KEYS]);
  assert.deepEqual(ClientStatusValue.anyOf.map((s) => s.const), [...CLIENT_STATUSES]);
  const listed = ClientListQuery.properties.client_id.anyOf[1] as unknown as { maxItems: number };
  assert.equal(listed.maxItems, MAX_LISTED_CLIENTS);
});
