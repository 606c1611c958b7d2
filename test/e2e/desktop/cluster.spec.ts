// The desktop app pointed at a cluster: a throwaway PostgreSQL, two
// `vpn-access serve --database` control planes, and three `vpn-access node run` data-plane nodes
// in three zones (127.0.0.2 in São Paulo, 127.0.0.3 in Tokyo, 127.0.0.4 in Amsterdam; no zone of
// the catalogue used here has the serve process's own `local` node, so every session is placed
// on a node). The app talks to control plane A only. Sessions made in its window and one made
// through control plane B all carry real v2ray traffic through their nodes at once; the window
// shows every session's counters move live (the Sessions list and the session detail), and
// Pause in the window cuts the transfer on the node.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from '../fixtures.ts';
import { AppPage } from '../pages.ts';
import { curlViaSocks, startOrigin, startV2ray, type Configuration, type V2ray } from '../vless.ts';
import { launchDesktop, type DesktopApp } from './harness.ts';
import { serve, type ServeProcess } from '../../helpers/cli.ts';
import { startPostgres, type PgServer } from '../../helpers/postgres.ts';
import { CLI, NODE, ROOT, removeDir, tempDir } from '../../helpers/server.ts';

const MiB = 1024 * 1024;

const childEnv = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('VPN_ACCESS_') || k.startsWith('NODE_TEST')) delete env[k];
  return env;
};

function cli(args: string[]): string {
  const r = spawnSync(NODE, [CLI, ...args], { cwd: ROOT, env: childEnv(), encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`vpn-access ${args.slice(0, 2).join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout.trim();
}

interface NodeProcess {
  child: ChildProcess;
  wsPort: number;
  output(): string;
}

/** `vpn-access node run` on `host`, failing over between both control planes; resolves once it listens. */
function runNode(token: string, host: string, controls: string[], dataDir: string): Promise<NodeProcess> {
  let out = '';
  const child = spawn(
    NODE,
    [CLI, 'node', 'run', '--control', controls.join(','), '--token', token, '--host', host, '--port', '0', '--vless-tcp-port', 'off', '--proxy-port', 'off', '--relay-port', '0', '--egress', 'allow-all', '--data-dir', dataDir],
    { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node run did not start:\n${out}`)), 30_000);
    const check = () => {
      const m = new RegExp(`node listening: VLESS ws ${host.replace(/\./g, '\\.')}:(\\d+)`).exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve({ child, wsPort: Number(m[1]), output: () => out });
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node run exited (${code}):\n${out}`));
    });
  });
}

test('the desktop app on a cluster: two control planes, nodes in three zones, every session moves live; pause cuts on the node', async ({ browser }) => {
  test.setTimeout(180_000);
  const dirs: string[] = [];
  const cleanups: Array<() => unknown> = [];
  let pg: PgServer | undefined;
  try {
    pg = await startPostgres();
    const url = await pg.createDatabase('cluster_e2e');
    const zonesFile = join(tempDir('vad-zones-'), 'zones.json');
    dirs.push(join(zonesFile, '..'));
    writeFileSync(zonesFile, JSON.stringify({
      zones: [
        { code: 'br-sao', name: 'São Paulo', country: 'BR', cities: ['sao paulo'], nodes: [] },
        { code: 'jp-tyo', name: 'Tokyo', country: 'JP', cities: ['tokyo'], nodes: [] },
        { code: 'nl-ams', name: 'Amsterdam', country: 'NL', cities: ['amsterdam'], nodes: [] },
      ],
    }));

    // Two control planes on the one database (migrations race safely), then the owner's token.
    const planes: ServeProcess[] = await Promise.all(['a', 'b'].map((n) => {
      const d = tempDir(`vad-cp-${n}-`);
      dirs.push(d);
      return serve(d, ['--database', url, '--zones', zonesFile, '--quiet', '--rate-limit', '100000/60']);
    }));
    for (const p of planes) cleanups.push(() => p.kill('SIGKILL'));
    const [a, b] = planes;
    const owner = cli(['token', 'create', '--customer', 'cluster-co', '--role', 'owner', '--database', url]);
    expect(owner).toMatch(/^vad_/);
    const api = async <T = any>(plane: ServeProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
      const res = await fetch(`${plane.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${owner}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
    };

    // A node in each zone, each given both control-plane URLs.
    const nodes: NodeProcess[] = [];
    for (const [name, zone, host] of [['sao-1', 'br-sao', '127.0.0.2'], ['tyo-1', 'jp-tyo', '127.0.0.3'], ['ams-1', 'nl-ams', '127.0.0.4']] as const) {
      const nodeToken = cli(['node', 'add', '--name', name, '--zone', zone, '--public-host', host, '--database', url]);
      const d = tempDir(`vad-node-${name}-`);
      dirs.push(d);
      const n = await runNode(nodeToken, host, planes.map((p) => p.baseUrl.replace(/\/v2$/, '')), d);
      cleanups.push(() => n.child.kill('SIGKILL'));
      nodes.push(n);
    }
    await expect.poll(async () => {
      const zones = (await api<{ zones: Array<{ code: string; has_active_nodes: boolean }> }>(b, 'GET', '/zones')).body.zones;
      return zones.filter((z) => z.has_active_nodes).map((z) => z.code).sort();
    }, { timeout: 20_000, message: 'the three zones active' }).toEqual(['br-sao', 'jp-tyo', 'nl-ams']);

    // The desktop app, aimed at control plane A.
    const d: DesktopApp = await launchDesktop({ browser, remote: { baseUrl: a.baseUrl, token: owner } });
    cleanups.push(() => d.quit());
    const app = new AppPage(d.page);
    const page = d.page;
    await app.waitReady();

    // Sessions made in the window (São Paulo, Amsterdam), one through control plane B (Tokyo).
    const saoId = await app.createSession({ clientId: 'alice', zone: 'br-sao', reusable: true });
    const amsId = await app.createSession({ clientId: 'carol', zone: 'nl-ams', reusable: true });
    const made = await api<{ id: string }>(b, 'POST', '/sessions', { client_id: 'bob', zone: 'jp-tyo', connection_type: 'vless', reusable: true });
    expect(made.status).toBe(201);
    const tyoId = made.body.id;
    const configOf = async (id: string) => (await api<{ configuration: Configuration }>(a, 'GET', `/sessions/${id}`)).body.configuration;
    const saoCfg = await configOf(saoId);
    const tyoCfg = await configOf(tyoId);
    const amsCfg = await configOf(amsId);
    // Each session's link points at its zone's node.
    expect(saoCfg).toMatchObject({ address: '127.0.0.2', port: nodes[0].wsPort });
    expect(tyoCfg).toMatchObject({ address: '127.0.0.3', port: nodes[1].wsPort });
    expect(amsCfg).toMatchObject({ address: '127.0.0.4', port: nodes[2].wsPort });

    const origin = await startOrigin();
    cleanups.push(() => origin.close());
    const clients: V2ray[] = [];
    for (const cfg of [saoCfg, tyoCfg, amsCfg]) {
      const v = await startV2ray(cfg);
      cleanups.push(() => v.stop());
      clients.push(v);
    }

    // The three transfers at once, ~1.3 MB/s each for ~6 s: the window's Sessions list shows
    // every row's counters growing while they run (bytes reach the API within 2 s of moving).
    await app.go('Sessions');
    const total = 64 * 1024 * 120;
    const slow = clients.map((v) => curlViaSocks(v.socksPort, `${origin.url}/slow?n=${total}&ms=50`, 90));
    const rowBytes = async (id: string) => {
      const row = page.locator(`[data-session-id="${id}"]`);
      return (await row.getByRole('cell').nth(4).textContent()) ?? '';
    };
    const ids = [saoId, tyoId, amsId];
    for (const id of ids) {
      const first = await expect.poll(() => rowBytes(id), { timeout: 15_000, message: `row ${id.slice(0, 8)} shows traffic` }).not.toMatch(/^0\s?B$/);
      void first;
    }
    const seen = new Map<string, string>();
    for (const id of ids) seen.set(id, await rowBytes(id));
    for (const id of ids) {
      await expect.poll(() => rowBytes(id), { timeout: 15_000, message: `row ${id.slice(0, 8)} keeps moving` }).not.toBe(seen.get(id));
    }
    for (const r of await Promise.all(slow.map((s) => s.done))) expect(r).toEqual({ code: 0, bytes: total });
    // When the transfers end, the window's detail shows exactly what the API counted, at least the bytes received.
    const nodeOf = { [saoId]: 'sao-1', [tyoId]: 'tyo-1', [amsId]: 'ams-1' };
    for (const id of ids) {
      await app.openSession(id);
      await expect(page.getByTestId('session-node')).toHaveText(nodeOf[id]);
      await expect.poll(() => app.downloadedBytes(), { timeout: 15_000 }).toBeGreaterThanOrEqual(total);
      const onB = (await api<{ downloaded_bytes: number }>(b, 'GET', `/sessions/${id}/status`)).body.downloaded_bytes;
      await expect.poll(() => app.downloadedBytes(), { timeout: 5_000 }).toBe(onB);
    }

    // Pause in the window (control plane A) cuts the Tokyo transfer on node 127.0.0.3.
    await app.openSession(tyoId);
    const before = await app.downloadedBytes();
    const cut = curlViaSocks(clients[1].socksPort, `${origin.url}/slow?n=${64 * 1024 * 600}&ms=50`, 90);
    await expect.poll(() => app.downloadedBytes(), { timeout: 15_000 }).toBeGreaterThan(before + 256 * 1024);
    await app.pauseButton().click();
    await expect(app.resumeButton()).toBeEnabled();
    const cutResult = await cut.done;
    expect(cutResult.bytes).toBeLessThan(64 * 1024 * 600);
    // Control plane B sees the pause too, and a new connection through the node carries nothing.
    expect((await api<{ paused: boolean }>(b, 'GET', `/sessions/${tyoId}`)).body.paused).toBe(true);
    expect((await curlViaSocks(clients[1].socksPort, `${origin.url}/bytes?n=100000`, 5).done).bytes).toBe(0);
    await page.screenshot({ path: test.info().outputPath('cluster-paused.png') });
  } finally {
    for (const c of cleanups.reverse()) await Promise.resolve().then(c).catch(() => {});
    await pg?.destroy();
    for (const dir of dirs) removeDir(dir);
  }
});
