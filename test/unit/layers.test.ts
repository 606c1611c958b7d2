// The layering of the code base, held by a test: every import statement of every source file
// (type-only imports included: a cycle of types is still a cycle) must point into a layer the
// importing layer may use. The rules are the architecture of docs/architecture.md and
// server/README.md in executable form; a new folder must be given a layer here before its files
// can import anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');

interface Layer {
  /** Path prefixes (from the repository root, with a trailing slash for folders) of the layer's files. */
  files: string[];
  /** Layers whose files this layer may import (its own files are always allowed). */
  may: string[];
  /** Packages this layer may import; `node:` built-ins are matched by the prefix `node:`. Undefined: any package. */
  packages?: string[];
}

const RENDERER_PACKAGES = ['react', 'react-dom', 'react-dom/client', 'react/jsx-runtime', 'zustand', 'eventsource', 'qrcode', '@tanstack/react-virtual', 'recharts'];

// Order matters: a file belongs to the first layer whose prefix matches it. Every server folder
// and top-level file has its own layer: a server file in no layer fails the test below. The
// server's layers, from the inside out (each may use only layers above it in this list):
const LAYERS: Record<string, Layer> = {
  domain: { files: ['server/domain.ts'], may: [], packages: [] },
  contract: { files: ['server/contract/'], may: ['domain'], packages: ['typebox'] },
  util: { files: ['server/time.ts', 'server/log.ts', 'server/outbound.ts'], may: ['domain'], packages: ['node:'] },
  // What main, preload, renderer (and the server's composition: its DisposableStore) share:
  // neither Node nor Electron nor the UI libraries.
  common: { files: ['common/'], may: ['contract'], packages: ['eventsource'] },
  // Files of the data folder holding a key; configuration links; the Prometheus registry.
  'key-file': { files: ['server/key-file.ts'], may: [], packages: ['node:'] },
  links: { files: ['server/links.ts'], may: ['contract'], packages: [] },
  metrics: { files: ['server/metrics.ts', 'server/prom.ts'], may: [], packages: ['prom-client', 'node:perf_hooks'] },
  store: { files: ['server/store/'], may: ['domain', 'contract', 'util'], packages: ['node:', 'pg'] },
  zones: { files: ['server/zones/'], may: ['domain', 'contract', 'util'], packages: ['node:'] },
  // The data plane knows neither fastify nor the store nor electron: DataPlaneDeps is its seam.
  dataplane: { files: ['server/dataplane/'], may: ['domain', 'contract', 'util'], packages: ['node:', 'ws'] },
  events: { files: ['server/events/'], may: ['domain', 'contract', 'util', 'store'], packages: ['node:'] },
  // Certificates of every listener (self-signed, ACME, given files), and the public host guess.
  tls: { files: ['server/tls/'], may: ['domain', 'util', 'links', 'dataplane'] },
  'public-host': { files: ['server/public-host.ts'], may: ['tls'], packages: ['node:'] },
  // Stores' neighbours that hold one concern each, below every use case.
  audit: { files: ['server/audit/'], may: ['domain', 'util', 'store'], packages: ['node:'] },
  usage: { files: ['server/usage/'], may: ['domain', 'util', 'store'], packages: ['node:'] },
  quota: { files: ['server/quota/'], may: ['domain', 'contract', 'util', 'store'], packages: ['node:'] },
  // The API's token guard and error format (fastify plugins), below the routes and the backends.
  plugins: { files: ['server/plugins/'], may: ['domain', 'contract', 'util', 'store'], packages: ['node:', 'fastify'] },
  // The control plane's side of the cluster: it never knows the services, only narrow deps types.
  cluster: {
    files: ['server/cluster/'],
    may: ['domain', 'contract', 'util', 'metrics', 'store', 'zones', 'dataplane', 'events', 'usage'],
    packages: ['node:', 'ws', 'prom-client'],
  },
  // What differs between SQLite and PostgreSQL under the composition.
  backend: { files: ['server/backend/'], may: ['domain', 'contract', 'util', 'metrics', 'store', 'dataplane', 'events', 'plugins', 'cluster'], packages: ['node:'] },
  // The session service, then the use cases built on it.
  sessions: {
    files: ['server/sessions.ts'],
    may: ['domain', 'contract', 'util', 'links', 'store', 'dataplane', 'events', 'tls', 'quota', 'cluster'],
    packages: ['node:'],
  },
  'use-cases': { files: ['server/limits.ts', 'server/pause.ts', 'server/clients/', 'server/support.ts'], may: ['domain', 'contract', 'store', 'dataplane', 'events', 'audit', 'quota', 'sessions'], packages: [] },
  subscriptions: { files: ['server/subscriptions/'], may: ['domain', 'contract', 'common', 'key-file', 'links', 'store', 'tls', 'sessions'], packages: ['node:', 'yaml', 'qrcode'] },
  webhooks: { files: ['server/webhooks/'], may: ['domain', 'contract', 'util', 'key-file', 'store', 'dataplane', 'audit'], packages: ['node:'] },
  // The server's configuration and its HTTP parts (body, OpenAPI, guard, metrics, web UI, retention).
  http: {
    files: ['server/http/'],
    may: ['domain', 'contract', 'util', 'links', 'metrics', 'dataplane', 'events', 'tls', 'usage', 'webhooks', 'plugins'],
  },
  // What makes clients fail before they connect (`vpn-access doctor`, GET /v2/doctor): checks on
  // the listeners, certificates, public host, egress policy, database, nodes and zones.
  doctor: { files: ['server/doctor/'], may: ['domain', 'contract', 'util', 'links', 'store', 'zones', 'dataplane', 'tls'], packages: ['node:'] },
  // The composition: the one place that knows every part.
  services: {
    files: ['server/services.ts'],
    may: ['domain', 'contract', 'common', 'util', 'metrics', 'store', 'zones', 'dataplane', 'events', 'tls', 'audit', 'usage', 'quota', 'plugins', 'cluster', 'backend', 'sessions', 'use-cases', 'subscriptions', 'webhooks', 'http'],
    packages: [],
  },
  routes: {
    files: ['server/routes/'],
    may: ['domain', 'contract', 'util', 'store', 'events', 'audit', 'usage', 'plugins', 'sessions', 'use-cases', 'subscriptions', 'webhooks', 'doctor', 'services'],
    packages: ['fastify', 'typebox'],
  },
  app: { files: ['server/app.ts'], may: ['contract', 'util', 'store', 'tls', 'quota', 'plugins', 'cluster', 'sessions', 'http', 'services', 'routes'] },
  serve: { files: ['server/serve.ts'], may: ['public-host', 'app'], packages: ['node:'] },
  // A data-plane node (`vpn-access node run`): the data plane, a channel to the control plane.
  node: { files: ['server/node/'], may: ['domain', 'contract', 'util', 'key-file', 'links', 'store', 'zones', 'dataplane', 'tls', 'cluster'] },
  // Backups of a data folder (SQLite): made while its server runs, put back while it is stopped.
  backup: { files: ['server/backup/'], may: ['domain', 'util', 'key-file', 'store', 'tls'], packages: ['node:'] },
  cli: { files: ['server/cli/', 'server/cli.ts'], may: ['domain', 'util', 'key-file', 'store', 'audit', 'tls', 'public-host', 'doctor', 'serve', 'node', 'backup'], packages: ['node:'] },
  preload: { files: ['preload/'], may: ['common'], packages: ['electron'] },
  // The renderer's screens (and main.tsx, which mounts them) reach the platform only through the store's actions.
  screens: {
    files: ['renderer/src/main.tsx', 'renderer/src/App.tsx', 'renderer/src/features/', 'renderer/src/components/'],
    may: ['renderer', 'common', 'contract'],
    packages: RENDERER_PACKAGES,
  },
  'renderer-platform': { files: ['renderer/src/platform/'], may: ['common', 'contract'], packages: RENDERER_PACKAGES },
  renderer: { files: ['renderer/'], may: ['renderer-platform', 'common', 'contract'], packages: RENDERER_PACKAGES },
  // Main may start the embedded server (server/serve.ts), back its folder up and restore it (server/backup/), and nothing else of the server but its contract.
  main: { files: ['main/'], may: ['common', 'contract', 'serve', 'backup'] },
};

const SOURCE = /\.(ts|tsx|mts|cts)$/;

function* sourceFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

/** Every module specifier a file imports or re-exports, static or dynamic, type-only included. */
export function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) found.push(m[1]!);
  return found;
}

function layerOf(file: string): string | undefined {
  const rel = relative(ROOT, file).split(sep).join('/');
  for (const [name, layer] of Object.entries(LAYERS)) if (layer.files.some((p) => (p.endsWith('/') ? rel.startsWith(p) : rel === p))) return name;
  return undefined;
}

function packageAllowed(layer: Layer, spec: string): boolean {
  if (!layer.packages) return true;
  return layer.packages.some((p) => (p === 'node:' ? spec.startsWith('node:') : spec === p || spec.startsWith(p + '/')));
}

/** Only the desktop shell (main and preload) ever touches Electron: the server runs without it. */
const ELECTRON_LAYERS = new Set(['main', 'preload']);

/** Why the import `spec` in the file `file` (absolute) breaks the layering, or null when it is allowed. */
export function breach(file: string, spec: string): string | null {
  const from = layerOf(file);
  if (!from) return 'belongs to no layer';
  const layer = LAYERS[from]!;
  if (!spec.startsWith('.')) {
    if ((spec === 'electron' || spec.startsWith('electron/')) && !ELECTRON_LAYERS.has(from)) return `(${from}) imports Electron`;
    return packageAllowed(layer, spec) ? null : `(${from}) imports the package '${spec}'`;
  }
  const target = resolve(dirname(file), spec);
  const to = layerOf(target);
  if (to === from || (to && layer.may.includes(to))) return null;
  return `(${from}) imports ${relative(ROOT, target)} (${to ?? 'outside every layer'})`;
}

export function violations(): { problems: string[]; checked: number } {
  const problems: string[] = [];
  let checked = 0;
  for (const top of ['server', 'common', 'main', 'preload', 'renderer']) {
    for (const file of sourceFiles(join(ROOT, top))) {
      checked++;
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        const why = breach(file, spec);
        if (why) problems.push(`${relative(ROOT, file)} ${why}`);
      }
    }
  }
  return { problems, checked };
}

/** The relative imports of every source file: file (from the repository root) -> the files it imports. */
export function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const top of ['server', 'common', 'main', 'preload', 'renderer']) {
    for (const file of sourceFiles(join(ROOT, top))) {
      const targets = importsOf(readFileSync(file, 'utf8'))
        .filter((spec) => spec.startsWith('.') && SOURCE.test(spec))
        .map((spec) => relative(ROOT, resolve(dirname(file), spec)).split(sep).join('/'));
      graph.set(relative(ROOT, file).split(sep).join('/'), [...new Set(targets)]);
    }
  }
  return graph;
}

/**
 * Import cycles of the graph, as the path of files that closes each: one for every back edge of a
 * depth-first search, so the list is empty exactly when the graph has no cycle.
 */
export function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      const s = state.get(next);
      if (s === 'open') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!s) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

test('every import stays inside the layers its layer may use', () => {
  const { problems, checked } = violations();
  assert.ok(checked > 100, `found the source files (${checked})`);
  assert.deepEqual(problems, []);
});

test('the server layers point only inward: each may use only layers listed before it', () => {
  const names = Object.keys(LAYERS);
  const server = names.filter((n) => LAYERS[n]!.files.every((f) => f.startsWith('server/')));
  assert.ok(server.length > 25, `every server folder has a layer (${server.length})`);
  const outward = server.flatMap((n) => LAYERS[n]!.may.filter((m) => names.indexOf(m) >= names.indexOf(n)).map((m) => `${n} -> ${m}`));
  assert.deepEqual(outward, []);
});

test('the rules refuse the imports that would break the layering', () => {
  const at = (rel: string) => join(ROOT, rel);
  // Storage, the data plane and the domain never reach up.
  assert.match(breach(at('server/store/store.ts'), '../dataplane/api.ts')!, /\(store\) imports server\/dataplane/);
  assert.match(breach(at('server/domain.ts'), './time.ts')!, /\(domain\)/);
  assert.match(breach(at('server/dataplane/relay.ts'), 'fastify')!, /package 'fastify'/);
  assert.match(breach(at('server/dataplane/relay.ts'), '../store/store.ts')!, /\(dataplane\)/);
  assert.match(breach(at('server/events/bus.ts'), '../dataplane/runtime.ts')!, /\(events\)/);
  assert.match(breach(at('server/app.ts'), 'electron')!, /imports Electron/);
  // The desktop app's three parts share only common/ (and the server's contract).
  assert.match(breach(at('main/ipc.ts'), '../renderer/src/store/index.ts')!, /\(main\)/);
  assert.match(breach(at('main/ipc.ts'), '../preload/index.ts')!, /\(main\)/);
  assert.match(breach(at('main/ipc.ts'), '../server/store/store.ts')!, /\(main\)/);
  assert.match(breach(at('renderer/src/App.tsx'), '../../main/ipc.ts')!, /\(screens\)/);
  assert.match(breach(at('renderer/src/store/index.ts'), '../../../main/ipc.ts')!, /\(renderer\)/);
  assert.match(breach(at('renderer/src/App.tsx'), 'node:fs')!, /package 'node:fs'/);
  // Screens reach the platform through the store; the platform knows nothing of the store.
  assert.match(breach(at('renderer/src/App.tsx'), './platform/index.ts')!, /\(screens\) imports renderer\/src\/platform/);
  assert.match(breach(at('renderer/src/features/SessionDetail.tsx'), '../platform/index.ts')!, /\(screens\)/);
  assert.match(breach(at('renderer/src/platform/web.ts'), '../store/index.ts')!, /\(renderer-platform\)/);
  assert.equal(breach(at('renderer/src/store/state.ts'), '../platform/index.ts'), null);
  assert.equal(breach(at('renderer/src/features/SessionDetail.tsx'), '../store/index.ts'), null);
  assert.match(breach(at('preload/index.ts'), '../renderer/src/App.tsx')!, /\(preload\)/);
  assert.match(breach(at('common/result.ts'), 'node:fs')!, /package 'node:fs'/);
  assert.match(breach(at('common/result.ts'), 'react')!, /package 'react'/);
  // The server's layers: nothing below the composition knows the services, routes stay out of
  // the cluster and the use cases, and a server file outside every layer is refused.
  assert.match(breach(at('server/cluster/node-channel.ts'), '../services.ts')!, /\(cluster\) imports server\/services\.ts/);
  assert.match(breach(at('server/cluster/crash-repair.ts'), '../sessions.ts')!, /\(cluster\)/);
  assert.match(breach(at('server/sessions.ts'), './services.ts')!, /\(sessions\)/);
  assert.match(breach(at('server/backend/postgres.ts'), '../services.ts')!, /\(backend\)/);
  assert.match(breach(at('server/limits.ts'), './services.ts')!, /\(use-cases\)/);
  assert.match(breach(at('server/routes/limits.ts'), '../cluster/node-channel.ts')!, /\(routes\)/);
  assert.match(breach(at('server/http/config.ts'), '../routes/limits.ts')!, /\(http\)/);
  assert.match(breach(at('server/webhooks/index.ts'), '../http/config.ts')!, /\(webhooks\)/);
  assert.match(breach(at('server/store/store.ts'), '../events/changes.ts')!, /\(store\)/);
  assert.match(breach(at('server/tls/index.ts'), '../services.ts')!, /\(tls\)/);
  assert.match(breach(at('server/node/run.ts'), '../services.ts')!, /\(node\)/);
  assert.equal(breach(at('server/new-part.ts'), './time.ts'), 'belongs to no layer');
  // And allow what the architecture allows.
  assert.equal(breach(at('main/endpoint.ts'), '../server/serve.ts'), null);
  assert.equal(breach(at('main/ipc.ts'), '../common/ipc-contract.ts'), null);
  assert.equal(breach(at('renderer/src/App.tsx'), '../../server/contract/schemas.ts'), null);
  assert.equal(breach(at('server/store/store.ts'), '../domain.ts'), null);
  assert.equal(breach(at('server/routes/sessions.ts'), '../sessions.ts'), null);
  assert.equal(breach(at('server/routes/limits.ts'), '../services.ts'), null);
  assert.equal(breach(at('server/services.ts'), './backend/sqlite.ts'), null);
  assert.equal(breach(at('server/cluster/node-channel.ts'), '../events/changes.ts'), null);
});

test('the import scanner sees every form of import', () => {
  const text = [
    "import a from './a.ts';",
    "import type { B } from '../b.ts';",
    'import {',
    '  c,',
    '  type D,',
    "} from './c.ts';",
    "export { e } from './e.ts';",
    "export * from './f.ts';",
    "import './g.css';",
    "const h = await import('./h.ts');",
    "// import x from './not-me.ts';",
    "/* import y from './nor-me.ts'; */",
  ].join('\n');
  assert.deepEqual(importsOf(text).sort(), ['../b.ts', './a.ts', './c.ts', './e.ts', './f.ts', './g.css', './h.ts'].sort());
});

test('no import cycle anywhere: server, desktop, shared code and renderer', () => {
  assert.deepEqual(cycles(importGraph()).map((c) => c.join(' -> ')), []);
});

test('the cycle search finds a cycle and only a cycle', () => {
  const g = (edges: Record<string, string[]>) => new Map(Object.entries(edges));
  assert.deepEqual(cycles(g({ a: ['b'], b: ['c'], c: [] })), []);
  assert.deepEqual(cycles(g({ a: ['b'], b: ['a'] })), [['a', 'b', 'a']]);
  assert.deepEqual(cycles(g({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] })), []);
  assert.deepEqual(cycles(g({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] })), [['a', 'b', 'c', 'a']]);
});
