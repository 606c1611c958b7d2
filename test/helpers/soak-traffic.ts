// The soak's clients: a session opened from an API answer (its own origin, a v2ray client on
// its link), and one transfer for it with real curl: through v2ray (VLESS to the node the session
// is placed on), or through that node's proxy as a CONNECT tunnel (the bytes the origin sees are
// then exactly the tunnel's payload), optionally geo-targeted at another zone's country so the
// node relays it to the node there. Downloads are paced by the origin; uploads by curl.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startV2rayClient, type V2rayClient } from '../dataplane/helpers/v2ray.ts';
import type { NodeProcess } from './cluster-procs.ts';
import { tempDir } from './server.ts';
import { startSessionOrigin, type SessionOrigin } from './soak-origin.ts';
import { parseVlessLink } from './vless-link.ts';

export interface SoakSession {
  id: string;
  /** The node it is placed on (the API's `node`). */
  node: string;
  zone: string;
  /** The instance that created it. */
  createdOn: string;
  network: string;
  paused: boolean;
  /** Whether a v2ray client could be started on its link. */
  vlessClient: boolean;
  origin: SessionOrigin;
  v2ray?: V2rayClient;
  closeClient(): Promise<void>;
  close(): Promise<void>;
}

/** A data-plane request's wait (ms) for its first answer byte, and the nodes it went through. */
export interface DataWait {
  at: number;
  ms: number;
  nodes: string[];
}

export interface Traffic {
  nodes: Map<string, NodeProcess>;
  transfers: number;
  failed: number;
  dataLatency: DataWait[];
}

const MiB = 1024 * 1024;
const UPLOAD_SIZES = [64 * 1024, 512 * 1024, 2 * MiB];
let uploadDir: string | undefined;
function uploadFile(size: number): string {
  if (!uploadDir) {
    const dir = tempDir('vad-soak-up-');
    for (const n of UPLOAD_SIZES) writeFileSync(join(dir, String(n)), randomBytes(n));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    uploadDir = dir;
  }
  return join(uploadDir, String(size));
}

export async function openSession(json: { id: string; node?: string; zone: string; configuration_link: string }, createdOn: string): Promise<SoakSession> {
  if (!json.node) throw new Error(`session ${json.id.slice(0, 8)} is not placed on a node`);
  const origin = await startSessionOrigin();
  const link = parseVlessLink(json.configuration_link);
  // A client that cannot start (a port race) leaves the session to the proxy clients.
  const v2ray = await startV2rayClient(link).catch(() => undefined);
  const s: SoakSession = {
    id: json.id,
    node: json.node,
    zone: json.zone,
    createdOn,
    network: link.network,
    paused: false,
    vlessClient: v2ray !== undefined,
    origin,
    v2ray,
    async closeClient() {
      const v = s.v2ray;
      s.v2ray = undefined;
      await v?.close();
    },
    async close() {
      await s.closeClient();
      await origin.close();
    },
  };
  return s;
}

interface Zone {
  code: string;
  country: string;
  node: string;
}

function curl(args: string[]): Promise<{ code: number; pretransfer: number; starttransfer: number }> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code} %{time_pretransfer} %{time_starttransfer}', ...args], { encoding: 'utf8' }, (_err, stdout) => {
      const [code, pre, startT] = String(stdout).trim().split(' ').map(Number);
      resolve({ code: code || 0, pretransfer: (pre || 0) * 1000, starttransfer: (startT || 0) * 1000 });
    });
  });
}

/**
 * One request for the session: a paced download (default 64 KiB..2 MiB at 4 MB/s) or an upload;
 * through v2ray, the node's proxy, or the proxy with `-cc-XX` of another zone (relayed).
 */
export async function transfer(
  traffic: Traffic,
  s: SoakSession,
  opts: { zones: Zone[]; mode?: 'vless' | 'proxy' | 'geo'; download?: number; rate?: number },
): Promise<void> {
  const node = traffic.nodes.get(s.node);
  if (!node) throw new Error(`unknown node ${s.node}`);
  const v = s.v2ray;
  const mode = opts.mode ?? (v && Math.random() < 0.5 ? 'vless' : Math.random() < 0.6 ? 'proxy' : 'geo');
  const upload = opts.download === undefined && Math.random() < 0.35;
  const size = upload ? UPLOAD_SIZES[Math.floor(Math.random() * UPLOAD_SIZES.length)] : (opts.download ?? Math.floor(64 * 1024 + Math.random() * 2 * MiB));
  const rate = opts.rate ?? 4_000_000;
  const args = ['--max-time', String(Math.ceil(size / rate) + 6)];
  const through = [s.node];
  if (mode === 'vless' && v) args.push('--socks5-hostname', `127.0.0.1:${v.socksPort}`);
  else {
    let user = s.id;
    if (mode === 'geo') {
      const exit = opts.zones.filter((z) => z.code !== s.zone)[Math.floor(Math.random() * (opts.zones.length - 1))];
      user = `${s.id}-cc-${exit.country}`;
      through.push(exit.node);
    }
    args.push('-p', '-x', `http://${node.host}:${node.ports.proxy}`, '-U', `${user}:${s.id}`);
  }
  if (upload) args.push('-H', 'Expect:', '--limit-rate', '4M', '--data-binary', `@${uploadFile(size)}`, s.origin.url('/up'));
  else args.push(s.origin.url(`/down?n=${size}&rate=${rate}`));
  const at = Date.now();
  const r = await curl(args);
  traffic.transfers++;
  if (r.code !== 200) {
    traffic.failed++;
    return;
  }
  // An upload's answer comes after its whole body: its wait is the tunnel's setup.
  traffic.dataLatency.push({ at, ms: upload ? r.pretransfer : r.starttransfer, nodes: through });
}
