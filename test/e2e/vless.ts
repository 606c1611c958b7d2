// Real VLESS traffic for the specs: a local HTTP server to download from, v2ray (Debian's
// 4.34) as the VLESS client with a SOCKS inbound, and downloads through that SOCKS port.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createServer as netServer, connect } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from '@playwright/test';

export interface Configuration {
  address: string;
  port: number;
  id: string;
  network: 'ws' | 'tcp';
  path?: string;
  security: 'none' | 'tls';
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = netServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}

/** Serves /bytes?n=N (N bytes at once) and /slow?n=N&ms=M (64 KiB chunks every M ms). */
export async function startOrigin(): Promise<{ url: string; close(): Promise<void> }> {
  const chunk = Buffer.alloc(64 * 1024, 120);
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const n = Number(u.searchParams.get('n') ?? 1024);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(n) });
    if (u.pathname === '/slow') {
      const ms = Number(u.searchParams.get('ms') ?? 100);
      let sent = 0;
      const t = setInterval(() => {
        if (sent >= n || res.destroyed) {
          clearInterval(t);
          res.end();
          return;
        }
        const part = chunk.subarray(0, Math.min(chunk.length, n - sent));
        sent += part.length;
        res.write(part);
      }, ms);
      res.on('close', () => clearInterval(t));
      return;
    }
    let sent = 0;
    const pump = () => {
      while (sent < n) {
        const part = chunk.subarray(0, Math.min(chunk.length, n - sent));
        sent += part.length;
        if (!res.write(part)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

export interface V2ray {
  socksPort: number;
  stop(): Promise<void>;
}

export async function startV2ray(cfg: Configuration): Promise<V2ray> {
  const socksPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'vad-v2ray-'));
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      log: { loglevel: 'warning' },
      inbounds: [{ listen: '127.0.0.1', port: socksPort, protocol: 'socks', settings: { auth: 'noauth', udp: false } }],
      outbounds: [
        {
          protocol: 'vless',
          settings: { vnext: [{ address: cfg.address, port: cfg.port, users: [{ id: cfg.id, encryption: 'none' }] }] },
          streamSettings: {
            network: cfg.network,
            security: cfg.security,
            ...(cfg.network === 'ws' ? { wsSettings: { path: cfg.path ?? '/' } } : {}),
          },
        },
      ],
    }),
  );
  const child: ChildProcess = spawn('/usr/bin/v2ray', ['-config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  // Ready when the SOCKS port accepts connections.
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = connect(socksPort, '127.0.0.1', () => { s.destroy(); r(true); });
      s.on('error', () => r(false));
    });
    if (ok) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`v2ray did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    socksPort,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Downloads through the SOCKS port with curl; resolves with curl's exit code and the byte count. */
export function curlViaSocks(socksPort: number, url: string, maxSeconds = 30): { done: Promise<{ code: number | null; bytes: number }>; kill(): void } {
  const child = spawn('curl', ['-sS', '-o', '/dev/null', '-w', '%{size_download}', '--max-time', String(maxSeconds), '--socks5-hostname', `127.0.0.1:${socksPort}`, url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const done = new Promise<{ code: number | null; bytes: number }>((resolve) => child.on('exit', (code) => resolve({ code, bytes: Number(out) || 0 })));
  return { done, kill: () => child.kill('SIGKILL') };
}

/** A real v2ray client downloads `n` bytes from a local origin through the session `cfg` names; both are stopped after. */
export async function downloadThrough(cfg: Configuration, n: number): Promise<void> {
  const origin = await startOrigin();
  try {
    const v2ray = await startV2ray(cfg);
    try {
      expect((await curlViaSocks(v2ray.socksPort, `${origin.url}/bytes?n=${n}`).done).code).toBe(0);
    } finally {
      await v2ray.stop();
    }
  } finally {
    await origin.close();
  }
}
