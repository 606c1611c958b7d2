// Shared fixtures of the API tests: in-process servers, tokens, and the assertions every
// error answer must pass.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildServer, type ServerOptions } from '../../server/app.ts';
import type { Services } from '../../server/services.ts';
import { startServer, type RunningServer, type StartOptions } from '../../server/serve.ts';
import { openDatabase } from '../../server/store/db.ts';
import { Store } from '../../server/store/store.ts';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** Node 24 of the project (the system node may be older). */
export const NODE = process.execPath;
export const CLI = join(ROOT, 'server', 'cli.ts');

/** `2026-11-22T10:04:05.123Z` */
export const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function tempDir(prefix = 'vad-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** Runs `use` with a store on a fresh data folder, then closes the store and removes the folder. */
export function withStore<T>(use: (store: Store) => T, prefix?: string): T {
  const dir = tempDir(prefix);
  const store = new Store(openDatabase(dir));
  try {
    return use(store);
  } finally {
    store.db.close();
    removeDir(dir);
  }
}

export interface TestServer {
  app: FastifyInstance;
  services: Services;
  dataDir: string;
  /** Owner token of customer "acme". */
  owner: string;
  /** Agent token of customer "acme". */
  agent: string;
  /** Owner token of customer "globex" (another tenant). */
  other: string;
  close(): Promise<void>;
}

/** An in-process server without data plane, with a generous rate limit unless given. */
export async function makeServer(opts: Partial<ServerOptions> = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  const { app, services } = await buildServer({
    dataPlane: null,
    rateLimit: { max: 100_000, windowMs: 60_000 },
    ...opts,
    dataDir,
  });
  const owner = (await services.data.createToken('acme', 'owner')).token;
  const agent = (await services.data.createToken('acme', 'agent')).token;
  const other = (await services.data.createToken('globex', 'owner')).token;
  let closed = false;
  return {
    app,
    services,
    dataDir,
    owner,
    agent,
    other,
    close: async () => {
      if (closed) return;
      closed = true;
      await app.close();
      removeDir(dataDir);
    },
  };
}

export interface TestListening extends RunningServer {
  dataDir: string;
  owner: string;
  stop(): Promise<void>;
}

/** A real listening server on a free loopback port (no data plane). */
export async function listen(opts: Partial<StartOptions> = {}): Promise<TestListening> {
  const dataDir = opts.dataDir ?? tempDir();
  const s = await startServer({
    dataPlane: null,
    vlessTcpPort: null,
    proxyPort: null,
    rateLimit: { max: 100_000, windowMs: 60_000 },
    ...opts,
    dataDir,
    host: '127.0.0.1',
    port: 0,
  });
  assert.ok(s.ownerToken, 'a new data folder creates an owner token');
  return {
    ...s,
    dataDir,
    owner: s.ownerToken,
    stop: async () => {
      await s.close();
      removeDir(dataDir);
    },
  };
}

export const auth = (token: string) => ({ authorization: `Bearer ${token}` });

export function json(res: LightMyRequestResponse): any {
  return JSON.parse(res.body);
}

/** The error record shape, JSON content type, the expected status and code; returns the body. */
export function assertError(res: LightMyRequestResponse, status: number, code?: string): { code: string; message: string; details: Record<string, unknown> } {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/, 'error bodies are JSON');
  const body = JSON.parse(res.body);
  assertErrorBody(body);
  if (code) assert.equal(body.error.code, code, res.body);
  return body.error;
}

export function assertErrorBody(body: any): void {
  assert.equal(typeof body, 'object');
  assert.ok(body !== null);
  assert.deepEqual(Object.keys(body), ['error'], 'only the error field');
  const e = body.error;
  assert.equal(typeof e, 'object');
  assert.deepEqual(Object.keys(e).sort(), ['code', 'details', 'message']);
  assert.equal(typeof e.code, 'string');
  assert.match(e.code, /^[a-z]+(_[a-z]+)*$/, 'codes are snake_case');
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  assert.equal(typeof e.details, 'object');
  assert.ok(e.details !== null && !Array.isArray(e.details), 'details is an object');
}

export function assertRateHeaders(res: { headers: Record<string, unknown> }, limit?: number): void {
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    assert.ok(res.headers[h] !== undefined, `missing ${h}`);
    assert.match(String(res.headers[h]), /^\d+$/, `${h} is a whole number`);
  }
  if (limit !== undefined) assert.equal(Number(res.headers['x-ratelimit-limit']), limit);
}

export async function createSession(
  app: FastifyInstance,
  token: string,
  body: Record<string, unknown> = {},
): Promise<{ id: string; [k: string]: any }> {
  const res = await app.inject({ method: 'POST', url: '/v2/sessions', headers: auth(token), payload: { client_id: 'client-1', zone: 'de-fra', ...body } });
  assert.equal(res.statusCode, 201, res.body);
  return JSON.parse(res.body);
}

/** Polls `check` until it returns true, at most `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Polls `fn` every 50 ms until it gives a truthy value, and returns it; throws naming `what` after `ms`. */
export async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Every route of the contract and extension, with a method and a concrete URL. */
export function allRoutes(sessionId: string): { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; url: string; body?: unknown }[] {
  const out: { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; url: string; body?: unknown }[] = [
    { method: 'GET', url: '/v2/zones' },
    { method: 'POST', url: '/v2/sessions', body: { client_id: 'c', zone: 'de-fra' } },
    { method: 'GET', url: '/v2/sessions' },
    { method: 'GET', url: `/v2/sessions/${sessionId}` },
    { method: 'GET', url: `/v2/sessions/${sessionId}/status` },
    { method: 'PATCH', url: `/v2/sessions/${sessionId}/pause` },
    { method: 'PATCH', url: `/v2/sessions/${sessionId}/resume` },
    { method: 'GET', url: '/v2/server-info' },
    { method: 'PUT', url: '/v2/subscriptions/client-1' },
    { method: 'GET', url: '/v2/subscriptions/client-1' },
    { method: 'DELETE', url: '/v2/subscriptions/client-1' },
    { method: 'GET', url: '/v2/usage' },
    { method: 'GET', url: '/v2/audit' },
    { method: 'GET', url: '/v2/clients/client-1/devices' },
    { method: 'DELETE', url: '/v2/clients/client-1/devices/hwid-1' },
    { method: 'GET', url: '/v2/clients' },
    { method: 'GET', url: '/v2/clients/client-1' },
    { method: 'PATCH', url: '/v2/clients/client-1', body: { disabled: false } },
    { method: 'GET', url: '/v2/clients/client-1/limits' },
    { method: 'PATCH', url: '/v2/clients/client-1/limits', body: { downloaded_bytes: 1 } },
    { method: 'DELETE', url: '/v2/clients/client-1/limits' },
    { method: 'POST', url: '/v2/clients/client-1/reset-usage' },
  ];
  for (const scope of ['global', 'client', 'session']) {
    out.push({ method: 'GET', url: `/v2/customer/limits/${scope}` });
    out.push({ method: 'PATCH', url: `/v2/customer/limits/${scope}`, body: { downloaded_bytes: 1 } });
    out.push({ method: 'DELETE', url: `/v2/customer/limits/${scope}` });
  }
  return out;
}
