// Starts the real server (startServer from server/serve.ts) inside the test process, on
// loopback with a free port, a fresh temporary data folder and the built renderer.
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startServer, type RunningServer } from '../../server/serve.ts';
import { createLogger } from '../../server/log.ts';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const RENDERER_DIR = join(ROOT, 'dist', 'renderer');

export interface Backend {
  origin: string;
  baseUrl: string;
  token: string;
  server: RunningServer;
  dataDir: string;
  /** A token of another role for the same customer. */
  newToken(role: 'owner' | 'agent'): string;
  api<T = unknown>(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

export async function startBackend(
  opts: { rateLimit?: { max: number; windowMs: number }; egress?: 'allow-all' | 'public-only'; onRequestLog?: (line: string) => void } = {},
): Promise<Backend> {
  if (!existsSync(join(RENDERER_DIR, 'index.html'))) throw new Error('dist/renderer is missing: run `npm run build` first');
  const dataDir = mkdtempSync(join(tmpdir(), 'vad-e2e-'));
  const server = await startServer({
    dataDir,
    port: 0,
    host: '127.0.0.1',
    rendererDir: RENDERER_DIR,
    rateLimit: opts.rateLimit ?? { max: 100_000, windowMs: 60_000 },
    vlessTcpPort: 0,
    proxyPort: 0,
    statsIntervalMs: 1000,
    heartbeatIntervalMs: 5000,
    // The tests relay to loopback targets: an explicit opt-in (the default refuses loopback).
    egress: opts.egress ?? 'allow-all',
    // One line per request (method, redacted path, status), for specs that count answers.
    ...(opts.onRequestLog ? { logRequests: true, logger: createLogger({ level: 'info', write: opts.onRequestLog }) } : {}),
  });
  const token = server.ownerToken;
  if (!token) throw new Error('a fresh data folder must yield an owner token');
  let stopped = false;
  return {
    origin: server.origin,
    baseUrl: server.baseUrl,
    token,
    server,
    dataDir,
    newToken: (role) => server.services.sqlite!.store.createToken('default', role).token,
    async api<T>(method: string, path: string, body?: unknown, tok = token) {
      const res = await fetch(server.baseUrl + path, {
        method,
        headers: { Authorization: `Bearer ${tok}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
